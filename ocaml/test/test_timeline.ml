(* The timeline (signaled, sleep, stop), failure (Fault after a kill, after close) and the
   runtime released while a call waits (another thread runs). *)
open OUnit2
module P = Rig_remote_proxy
module F = Fixture

let now = Unix.gettimeofday

let test_values_start_after_word _ =
  F.with_agent (fun t ->
      let d, word = F.proxy_and_word ~value:41 t 1 in
      assert_equal 41 (P.signaled d);
      let v = Edge.run d [||] in
      assert_equal 42 v;
      assert_equal ~printer:string_of_int 42 (P.Word.get word))

let test_sleep_bound _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      let t0 = now () in
      P.sleep d ~seen:(P.signaled d) ~still_ms:300;
      let waited = now () -. t0 in
      (* Within 10 times its bound: a busy machine meets that, and a sleep that misread its unit,
         or waited for a value, does not. *)
      assert_bool (Printf.sprintf "sleep returned after %.3f s" waited) (waited < 3.0);
      let t0 = now () in
      P.sleep d ~seen:(P.signaled d + 1) ~still_ms:30000;
      assert_bool "at once when the word differs" (now () -. t0 < 3.0))

(* The agent stopped, so nothing is reported: stop writes the last value given. *)
let test_stop _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      ignore (Edge.run d [||]);
      Agent.signal t.agent Sys.sigstop;
      let cont = Agent.cont_after t.agent 10. in
      let v = Edge.next d in
      Edge.submit_exn d v [||];
      P.stop d ~fault:None;
      let after = P.signaled d in
      Agent.signal t.agent Sys.sigcont;
      Agent.cancel cont;
      assert_equal ~printer:string_of_int v after;
      P.stop d ~fault:(Some "again"))

let test_fault_after_kill _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      let r = F.alloc d 4096 in
      Unix.kill t.agent.pid Sys.sigkill;
      let deadline = now () +. 20. in
      let rec until_fault () =
        match P.sleep d ~seen:(P.signaled d) ~still_ms:200 with
        | exception P.Fault why -> why
        | () -> if now () > deadline then assert_failure "no Fault" else until_fault ()
      in
      let why = until_fault () in
      assert_bool "a root cause" (why <> "" && why <> "the job is closed");
      ignore (F.raises_fault (fun () -> P.alloc d Rig_edge.Device 4096));
      (match Edge.submit d (Edge.next d) [||] with
      | Error w -> assert_equal ~printer:Fun.id why w
      | Ok () -> assert_failure "submit after the failure");
      P.free d r;
      match P.Link.state t.link with
      | P.Link.Failed w -> assert_equal ~printer:Fun.id why w
      | _ -> assert_failure "state")

let test_fault_after_close _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 and host = F.proxy t 0 in
      P.Link.close t.link;
      let why = F.raises_fault (fun () -> P.alloc d Rig_edge.Device 4096) in
      assert_equal ~printer:Fun.id "the job is closed" why;
      (* image answers Error only for a refusal; a closed job is a Fault there too *)
      let why = F.raises_fault (fun () -> P.image host "not a program") in
      assert_equal ~printer:Fun.id "the job is closed" why;
      assert_equal P.Link.Closed (P.Link.state t.link))

(* A thread that counts while another waits in a stub: it advances only if the stub released
   the runtime. *)
let with_counter f =
  let count = ref 0 and stop = ref false in
  let th = Thread.create (fun () -> while not !stop do incr count; Thread.yield () done) () in
  Fun.protect ~finally:(fun () -> stop := true; Thread.join th) (fun () -> f count)

let test_thread_runs_during_sleep _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      with_counter (fun count ->
          let c0 = !count in
          P.sleep d ~seen:(P.signaled d) ~still_ms:300;
          let c1 = !count in
          assert_bool (Printf.sprintf "counter %d -> %d" c0 c1) (c1 > c0)))

let test_thread_runs_during_alloc _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      Agent.signal t.agent Sys.sigstop;
      let cont = Agent.cont_after t.agent 5. in
      let entered = ref false and result = ref None in
      let waiter =
        Thread.create (fun () -> entered := true; result := Some (P.alloc d Rig_edge.Device 4096)) ()
      in
      while not !entered do Thread.yield () done;
      with_counter (fun count ->
          let c0 = !count in
          Thread.delay 0.3;
          let c1 = !count in
          let pending = !result = None in
          Agent.signal t.agent Sys.sigcont;
          Thread.join waiter;
          Agent.cancel cont;
          assert_bool "alloc waited for the stopped agent" pending;
          assert_bool (Printf.sprintf "counter %d -> %d" c0 c1) (c1 > c0);
          match !result with Some (Some r) -> P.free d r | _ -> assert_failure "alloc"))

let tests =
  "timeline"
  >::: [
         "values_start_after_word" >:: test_values_start_after_word;
         "sleep_bound" >:: test_sleep_bound;
         "stop" >:: test_stop;
         "fault_after_kill" >:: test_fault_after_kill;
         "fault_after_close" >:: test_fault_after_close;
         "thread_runs_during_sleep" >:: test_thread_runs_during_sleep;
         "thread_runs_during_alloc" >:: test_thread_runs_during_alloc;
       ]
