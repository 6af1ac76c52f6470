(* The OCaml library's tests, against real rig-agent processes (ocaml/README.md). *)
let () =
  (* forked runners would copy the agents' pipes and threads: run in this process *)
  if Sys.getenv_opt "OUNIT_RUNNER" = None then Unix.putenv "OUNIT_RUNNER" "sequential";
  Random.self_init ();
  OUnit2.run_test_tt_main
    (OUnit2.test_list [ Test_link.tests; Test_copies.tests; Test_timeline.tests; Test_code.tests ])
