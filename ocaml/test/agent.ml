(* A real rig-agent on loopback for each test: started from RIG_AGENT_PATH with a secret file
   of its own (so the test does not depend on RIG_SECRET* in the environment), killed after. *)
type t = { pid : int; endpoint : string; out : in_channel; secret : string }

let path () =
  match Sys.getenv_opt "RIG_AGENT_PATH" with
  | Some p when p <> "" -> p
  | _ -> failwith "RIG_AGENT_PATH is not set (the ctest test sets it)"

let write_secret () =
  let file = Filename.temp_file "rig-ocaml-secret" "" in
  Unix.chmod file 0o600;
  let oc = open_out_bin file in
  for _ = 1 to 48 do
    output_char oc "0123456789abcdef".[Random.int 16]
  done;
  close_out oc;
  file

let environment () =
  Unix.environment ()
  |> Array.to_list
  |> List.filter (fun e ->
         not (String.length e >= 10 && String.sub e 0 10 = "RIG_SECRET"))
  |> Array.of_list

let prefix = "rig-agent listening on "

let rec read_endpoint ic =
  let line = input_line ic in
  let n = String.length prefix in
  if String.length line >= n && String.sub line 0 n = prefix then
    String.trim (String.sub line n (String.length line - n))
  else read_endpoint ic

let start ?(devices = 2) ?(args = []) () =
  let secret = write_secret () in
  let argv =
    [ path (); "--log"; "warn"; "--listen"; "127.0.0.1:0"; "--devices"; string_of_int devices;
      "--secret-file"; secret ] @ args
  in
  let r, w = Unix.pipe ~cloexec:true () in
  let pid = Unix.create_process_env (List.hd argv) (Array.of_list argv) (environment ()) Unix.stdin w Unix.stderr in
  Unix.close w;
  let out = Unix.in_channel_of_descr r in
  let endpoint = try read_endpoint out with End_of_file -> failwith "rig-agent printed no endpoint" in
  { pid; endpoint; out; secret }

let options a = { Rig_remote_proxy.Link.default_options with secret_file = Some a.secret }
let connect ?job a = Rig_remote_proxy.Link.connect ~options:(options a) ?job a.endpoint
let signal a s = try Unix.kill a.pid s with Unix.Unix_error _ -> ()

let kill a =
  signal a Sys.sigcont;
  signal a Sys.sigkill;
  (try ignore (Unix.waitpid [] a.pid) with Unix.Unix_error _ -> ());
  close_in_noerr a.out;
  try Sys.remove a.secret with Sys_error _ -> ()

(* Sends SIGCONT after seconds from another process: a stopped agent resumes even if this
   process could not (a stub that kept the runtime while it waited would hang it). *)
let cont_after a seconds =
  let cmd = Printf.sprintf "sleep %g; kill -CONT %d" seconds a.pid in
  let null = Unix.openfile "/dev/null" [ Unix.O_RDWR; Unix.O_CLOEXEC ] 0 in
  let pid = Unix.create_process "/bin/sh" [| "/bin/sh"; "-c"; cmd |] null null null in
  Unix.close null;
  pid

(* Ends what cont_after started (its sleep, orphaned, holds nothing of ours). *)
let cancel pid =
  (try Unix.kill pid Sys.sigkill with Unix.Unix_error _ -> ());
  try ignore (Unix.waitpid [] pid) with Unix.Unix_error _ -> ()
