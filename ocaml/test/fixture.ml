(* Each test gets its own agent and link, and gives them back whatever happens. *)
module P = Rig_remote_proxy

type t = { agent : Agent.t; link : P.Link.t }

let with_agent ?devices ?args f =
  Hashtbl.reset Edge.counters;
  let agent = Agent.start ?devices ?args () in
  Fun.protect
    ~finally:(fun () -> Agent.kill agent)
    (fun () ->
      let link = Agent.connect agent in
      Fun.protect ~finally:(fun () -> P.Link.close link) (fun () -> f { agent; link }))

let account t id =
  match P.Link.account t.link id with Some a -> a | None -> OUnit2.assert_failure (Printf.sprintf "no account %d" id)

let capability_of (a : P.Wire.account) =
  if a.id = 0 then Rig_remote_abi.Host () else Rig_remote_abi.Device { id = a.id }

(* A proxy of device id with a word of its own (returned too). *)
let proxy_and_word ?(value = 0) t id =
  let a = account t id in
  let word = P.Word.make ~value () in
  (P.make (P.device t.link a (capability_of a)) ~word, word)

let proxy ?value t id = fst (proxy_and_word ?value t id)

let alloc d n =
  match P.alloc d Rig_edge.Device n with Some r -> r | None -> OUnit2.assert_failure "alloc: None"

let raises_fault f =
  match f () with
  | exception P.Fault why -> why
  | _ -> OUnit2.assert_failure "expected Fault"
