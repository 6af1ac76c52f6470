(* Copies 1 MiB into device 1 of an agent and back through the proxy's C functions, checks the
   bytes, then shows the Fault a call raises once the job is closed.
   Usage: copy_example HOST:PORT (the agent prints it; RIG_SECRET_FILE if it has a secret). *)
module P = Rig_remote_proxy
open Bigarray

external copy : Rig_edge.c_functions -> (char, int8_unsigned_elt, c_layout) Array1.t -> nativeint -> bool -> int -> int
  = "example_copy"

(* Submits the copy as value v (asking again while room says later), then waits for v. *)
let run d buffer handle ~to_region v =
  while copy (P.c_functions d) buffer handle to_region v = 1 do
    P.sleep d ~seen:(P.signaled d) ~still_ms:100
  done;
  while P.signaled d < v do
    P.sleep d ~seen:(P.signaled d) ~still_ms:1000
  done

let () =
  if Array.length Sys.argv <> 2 then (prerr_endline "usage: copy_example HOST:PORT"; exit 2);
  let link = P.Link.connect Sys.argv.(1) in
  let account =
    match P.Link.account link 1 with Some a -> a | None -> failwith "the agent opened no device 1"
  in
  let d = P.make (P.device link account (Rig_remote_abi.Device { id = 1 })) ~word:(P.Word.make ()) in
  let n = 1 lsl 20 in
  let region = match P.alloc d Rig_edge.Device n with Some r -> r | None -> failwith "no memory" in
  let handle = (P.locate region).handle in
  let out = Array1.init char c_layout n (fun i -> Char.chr ((i * 7) land 0xff)) in
  let back = Array1.create char c_layout n in
  Array1.fill back '\000';
  run d out handle ~to_region:true 1;
  run d back handle ~to_region:false 2;
  if out <> back then failwith "the bytes came back different";
  Printf.printf "copied %d bytes to %s and back: exact\n" n account.name;
  P.free d region;
  P.Link.close link;
  (match P.alloc d Rig_edge.Device 4096 with
  | exception P.Fault why -> Printf.printf "after close, alloc raises Fault %S\n" why
  | _ -> failwith "alloc after close did not raise Fault");
  P.stop d ~fault:None
