(* The test's side of rig's C functions: submissions built in C (edge_stubs.c) from these
   values, and helpers that copy and wait as rig does. Host memory is Bigarrays, never bytes. *)
open Bigarray

type buffer = (char, int8_unsigned_elt, c_layout) Array1.t

type side = Mem of buffer * int | Obj of nativeint * int

type part =
  | Copy of { src : side; dst : side; rows : int; row_bytes : int; src_pitch : int; dst_pitch : int }
  | Kernel

type wait = nativeint * nativeint * int

external room_raw : Rig_edge.c_functions -> wait array -> part array -> int = "rig_test_room"

external submit_raw : Rig_edge.c_functions -> wait array -> part array -> int -> int * string
  = "rig_test_submit"

let fits = 0 and later = 1 and never = 2

let room ?(waits = [||]) d parts = room_raw (Rig_remote_proxy.c_functions d) waits parts

(* submit d v parts: Ok () once committed, Error why if it failed. *)
let submit ?(waits = [||]) d v parts =
  match submit_raw (Rig_remote_proxy.c_functions d) waits parts v with
  | 0, _ -> Ok ()
  | _, why -> Error why

let submit_exn ?waits d v parts =
  match submit ?waits d v parts with Ok () -> () | Error why -> failwith ("submit: " ^ why)

let buffer n : buffer =
  let b = Array1.create char c_layout n in
  Array1.fill b '\000';
  b

let random_buffer n : buffer =
  let b = Array1.create char c_layout n in
  for i = 0 to n - 1 do
    Array1.unsafe_set b i (Char.unsafe_chr (Random.bits () land 0xff))
  done;
  b

let handle r = (Rig_remote_proxy.locate r).handle
let copy ~src ~dst n = Copy { src; dst; rows = 1; row_bytes = n; src_pitch = n; dst_pitch = n }

(* Waits until d's word reaches v, sleeping as rig does; fails after seconds. *)
let wait ?(seconds = 30.) d v =
  let deadline = Unix.gettimeofday () +. seconds in
  while Rig_remote_proxy.signaled d < v do
    if Unix.gettimeofday () > deadline then failwith (Printf.sprintf "value %d never came" v);
    Rig_remote_proxy.sleep d ~seen:(Rig_remote_proxy.signaled d) ~still_ms:1000
  done

(* A proxy's values: each submit takes the next one. *)
let counters : (nativeint, int ref) Hashtbl.t = Hashtbl.create 8

let next d =
  let h = (Rig_remote_proxy.c_functions d).handle in
  let c =
    match Hashtbl.find_opt counters h with
    | Some c -> c
    | None ->
        let c = ref (Rig_remote_proxy.signaled d) in
        Hashtbl.replace counters h c;
        c
  in
  incr c;
  !c

(* Runs parts as d's next value and waits for it. *)
let run d parts =
  let v = next d in
  submit_exn d v parts;
  wait d v;
  v
