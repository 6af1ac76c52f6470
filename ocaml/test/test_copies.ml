(* Memory and copies both ways through the C functions (room, submit), and room's answers. *)
open OUnit2
module P = Rig_remote_proxy
module F = Fixture
open Edge

let mib = 1 lsl 20

(* n bytes out of this process into a region, back into a second buffer, compared. *)
let round_trip d n =
  let r = F.alloc d n in
  let a = random_buffer n and b = buffer n in
  let h = handle r in
  let parts = [| copy ~src:(Mem (a, 0)) ~dst:(Obj (h, 0)) n |] in
  assert_equal ~printer:string_of_int fits (room d parts);
  ignore (run d parts);
  ignore (run d [| copy ~src:(Obj (h, 0)) ~dst:(Mem (b, 0)) n |]);
  assert_bool "bytes back exact" (a = b);
  P.free d r

let test_alloc_free _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      let r = F.alloc d 4096 and h = F.alloc d 4096 in
      assert_bool "two objects" (P.locate r <> P.locate h);
      (match P.alloc d Rig_edge.Host 4096 with Some x -> P.free d x | None -> ());
      assert_equal None (P.alloc d Rig_edge.Device (1 lsl 40));
      (match P.alloc d Rig_edge.Device 6 with
      | exception Invalid_argument _ -> ()
      | _ -> assert_failure "alloc of 6 bytes");
      P.free d r;
      P.free d h)

let test_1mib _ = F.with_agent (fun t -> round_trip (F.proxy t 1) mib)
let test_64mib _ = F.with_agent (fun t -> round_trip (F.proxy t 2) (64 * mib))

(* rows laid out with a pitch larger than the row on both sides, both ways *)
let test_strided _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      let rows = 5 and row = 1000 and host_pitch = 1536 and obj_pitch = 1024 in
      let r = F.alloc d (rows * obj_pitch) in
      let a = random_buffer (rows * host_pitch) and b = buffer (rows * 2048) in
      let h = handle r in
      let put =
        Copy { src = Mem (a, 0); dst = Obj (h, 0); rows; row_bytes = row; src_pitch = host_pitch; dst_pitch = obj_pitch }
      and get =
        Copy { src = Obj (h, 0); dst = Mem (b, 0); rows; row_bytes = row; src_pitch = obj_pitch; dst_pitch = 2048 }
      in
      ignore (run d [| put |]);
      ignore (run d [| get |]);
      for i = 0 to rows - 1 do
        for j = 0 to 2047 do
          let got = Bigarray.Array1.get b ((i * 2048) + j) in
          let want = if j < row then Bigarray.Array1.get a ((i * host_pitch) + j) else '\000' in
          if got <> want then assert_failure (Printf.sprintf "row %d byte %d" i j)
        done
      done)

(* RIG_NEVER for a kernel part; RIG_LATER past 64 MiB in flight (the agent stopped, so nothing
   is reported); RIG_FITS again once it is done. *)
let test_room _ =
  F.with_agent (fun t ->
      let d = F.proxy t 1 in
      assert_equal ~printer:string_of_int never (room d [| Kernel |]);
      let n = (64 * mib) + 4096 in
      let r = F.alloc d n and small = buffer 4096 in
      let out = buffer n in
      let probe = [| copy ~src:(Mem (small, 0)) ~dst:(Obj (handle r, 0)) 4096 |] in
      assert_equal ~printer:string_of_int fits (room d probe);
      Agent.signal t.agent Sys.sigstop;
      let cont = Agent.cont_after t.agent 10. in
      let v = next d in
      submit_exn d v [| copy ~src:(Obj (handle r, 0)) ~dst:(Mem (out, 0)) n |];
      let answer = room d probe in
      Agent.signal t.agent Sys.sigcont;
      Agent.cancel cont;
      assert_equal ~printer:string_of_int later answer;
      wait d v;
      assert_equal ~printer:string_of_int fits (room d probe))

let tests =
  "copies"
  >::: [
         "alloc_free" >:: test_alloc_free;
         "copy_1mib" >:: test_1mib;
         "copy_64mib" >:: test_64mib;
         "strided" >:: test_strided;
         "room" >:: test_room;
       ]
