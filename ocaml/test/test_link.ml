(* Link, Wire, Word, device, make's rules and the calls that never ask the agent. *)
open OUnit2
module P = Rig_remote_proxy
module F = Fixture

let test_link _ =
  F.with_agent (fun t ->
      let accounts = P.Link.accounts t.link in
      assert_equal ~printer:string_of_int 3 (List.length accounts);
      let host = F.account t 0 and sim1 = F.account t 1 in
      assert_equal P.Wire.Host host.kind;
      assert_equal P.Wire.Simulated sim1.kind;
      assert_bool "names" (host.name <> "" && sim1.name <> host.name);
      assert_bool "budget" (sim1.budget > 0);
      assert_equal None (P.Link.account t.link 9);
      let a = P.Link.fresh t.link and b = P.Link.fresh t.link in
      assert_bool "fresh ids differ" (a <> b);
      let given, reached = P.Link.endpoint t.link in
      assert_equal ~printer:Fun.id t.agent.endpoint given;
      assert_bool "reached" (reached <> "");
      assert_equal P.Link.Running (P.Link.state t.link);
      (* a second link of the same job *)
      let l2 = Agent.connect ~job:(P.Link.job_of t.link) t.agent in
      assert_equal 3 (List.length (P.Link.accounts l2));
      (* a job made first, then connected *)
      let l3 = Agent.connect ~job:(P.Link.job ()) t.agent in
      assert_equal P.Link.Running (P.Link.state l3);
      P.Link.close l3;
      assert_equal P.Link.Running (P.Link.state t.link))

let test_connect_fails _ =
  match P.Link.connect "127.0.0.1:1" with
  | exception Failure _ -> ()
  | _ -> assert_failure "connect to a closed port succeeded"

let test_word _ =
  let w = P.Word.make ~value:5 () in
  assert_equal 5 (P.Word.get w);
  assert_bool "address" (P.Word.address w <> 0n);
  assert_equal 0n (Nativeint.rem (P.Word.address w) 8n)

let test_make_rules _ =
  F.with_agent (fun t ->
      let sim1 = F.account t 1 in
      let d = P.device t.link sim1 (Rig_remote_abi.Device { id = 1 }) in
      assert_equal ~printer:Fun.id sim1.name d.name;
      let word () = P.Word.make () in
      let invalid c a =
        match P.make (P.device t.link a c) ~word:(word ()) with
        | exception Invalid_argument _ -> ()
        | _ -> assert_failure "make took a wrong capability"
      in
      invalid (Rig_remote_abi.Host ()) sim1;
      invalid (Rig_remote_abi.Device { id = 2 }) sim1;
      let p = P.make d ~word:(word ()) in
      (match P.make d ~word:(word ()) with
      | exception Invalid_argument _ -> ()
      | _ -> assert_failure "a second proxy of one device");
      assert_equal (Rig_remote_abi.Device { id = 1 }) (P.capability p);
      assert_equal ~printer:Fun.id sim1.name (P.name p);
      ignore (Sys.opaque_identity p))

(* A proxy that handed nothing over, once collected, lets another be made; one that handed
   work over does not. *)
let test_make_after_collect _ =
  F.with_agent (fun t ->
      let make_and_drop work =
        let d = F.proxy t 1 in
        if work then ignore (Edge.run d [||]);
        ignore (Sys.opaque_identity d)
      in
      make_and_drop false;
      Gc.full_major ();
      make_and_drop true;
      Gc.full_major ();
      match F.proxy t 1 with
      | exception Invalid_argument _ -> ()
      | _ -> assert_failure "a proxy of an account whose proxy handed work over")

let test_facts _ =
  F.with_agent (fun t ->
      let d, word = F.proxy_and_word t 1 in
      let a = F.account t 1 in
      let f = P.facts d in
      assert_equal ~printer:Fun.id a.arch f.arch;
      assert_equal a.budget f.budget;
      assert_equal a.cache_bytes f.cache_bytes;
      assert_equal [ "COMPUTE:0"; "COPY:0" ] f.queues;
      assert_equal (Some (1, "COPY:0")) f.copy_engine;
      assert_equal Rig_edge.Host f.completion;
      assert_equal { Rig_edge.hosts = true; most = max_int } f.waits;
      assert_bool "may_block" f.may_block;
      assert_equal None f.hang_ms;
      assert_bool "maps_host, host_addresses" (not (f.maps_host || f.host_addresses));
      assert_equal None f.bus;
      assert_equal (Rig_remote_abi.declare (Rig_remote_abi.Device { id = 1 })) f.capability;
      match f.word with
      | None -> assert_failure "no word"
      | Some w ->
          let l = P.locate w in
          assert_equal (Some 1n) l.address;
          assert_equal (Some (P.Word.address word)) l.host;
          assert_equal 0n l.handle)

let test_key _ =
  match Rig_type.Id.provably_equal P.key P.key with
  | Some Rig_type.Equal -> assert_bool "uid" (Rig_type.Id.uid P.key >= 0)
  | None -> assert_failure "key"

let test_no_agent_calls _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      let r = F.alloc d 4096 in
      assert_equal Rig_edge.Grown (P.grow d);
      assert_equal None (P.map_host d 4096 4096);
      (match P.dma d r ~fn:"0000:41:00.0" with
      | Error why -> assert_bool "why" (why <> "")
      | Ok _ -> assert_failure "dma");
      let l = P.locate r in
      assert_equal None l.address;
      assert_equal None l.host;
      assert_bool "handle" (l.handle <> 0n);
      P.free d r)

let test_peer _ =
  F.with_agent (fun t ->
      let d1 = F.proxy t 1 and d2 = F.proxy t 2 in
      let reaches = (F.account t 2).reaches land (1 lsl 1) <> 0 in
      assert_equal ~printer:string_of_bool reaches (P.peer d1 d2);
      let w2 = Option.get (P.facts d2).word in
      assert_equal (Some w2) (P.map_peer d1 d2 w2);
      let r2 = F.alloc d2 4096 in
      (match P.map_peer d1 d2 r2 with
      | Some m ->
          assert_bool "a new object" (P.locate m <> P.locate r2);
          P.free d1 m
      | None -> assert_bool "mapped only if peer" (not (P.peer d1 d2)));
      (* a proxy of another link (another job) *)
      let other = Agent.connect t.agent in
      let a1 = F.account t 1 in
      let o1 = P.make (P.device other a1 (Rig_remote_abi.Device { id = 1 })) ~word:(P.Word.make ()) in
      assert_bool "two links" (not (P.peer d1 o1));
      assert_equal None (P.map_peer o1 d2 r2);
      P.Link.close other)

let tests =
  "link"
  >::: [
         "link" >:: test_link;
         "connect_fails" >:: test_connect_fails;
         "word" >:: test_word;
         "make_rules" >:: test_make_rules;
         "make_after_collect" >:: test_make_after_collect;
         "facts" >:: test_facts;
         "key" >:: test_key;
         "no_agent_calls" >:: test_no_agent_calls;
         "peer" >:: test_peer;
       ]
