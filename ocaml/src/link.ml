type job

type raw

type t = { job : job; raw : raw }

type backend = Default | Uring | Plain

type options = {
  secret_file : string option;
  stripes : int option;
  stripe_min_bytes : int option;
  backend : backend;
  keepalive_ms : int option;
  silence_ms : int option;
  poll_us : int option;
  send_zc_bytes : int option;
}

let default_options =
  {
    secret_file = None;
    stripes = None;
    stripe_min_bytes = None;
    backend = Default;
    keepalive_ms = None;
    silence_ms = None;
    poll_us = None;
    send_zc_bytes = None;
  }

external job : unit -> job = "rig_ml_job_create"

(* The options' fields in the stubs' order; backend as rig_backend's int. *)
type raw_options =
  string option * int option * int option * int * int option * int option * int option * int option

external connect_raw : job -> string -> raw_options -> raw = "rig_ml_link_connect"

external accounts_raw : raw -> (int * int * int * int * int * string * string) array
  = "rig_ml_link_accounts"

external fresh_raw : raw -> int64 = "rig_ml_link_fresh"
external endpoint_raw : raw -> string * string = "rig_ml_link_endpoint"
external state_raw : job -> int * string = "rig_ml_job_state"
external close_raw : job -> unit = "rig_ml_job_close"

let backend_int = function Default -> 0 | Uring -> 1 | Plain -> 2

let connect ?(options = default_options) ?job:j endpoint =
  let j = match j with Some j -> j | None -> job () in
  let o = options in
  let raw_options =
    ( o.secret_file, o.stripes, o.stripe_min_bytes, backend_int o.backend, o.keepalive_ms,
      o.silence_ms, o.poll_us, o.send_zc_bytes )
  in
  { job = j; raw = connect_raw j endpoint raw_options }

let job_of l = l.job

let kind_of = function 0 -> Wire.Host | 1 -> Wire.Simulated | _ -> Wire.Gpu

let accounts l =
  accounts_raw l.raw
  |> Array.to_list
  |> List.map (fun (id, kind, budget, cache_bytes, reaches, name, arch) ->
         { Wire.id; kind = kind_of kind; name; arch; budget; cache_bytes; reaches })

let account l id = List.find_opt (fun (a : Wire.account) -> a.id = id) (accounts l)
let fresh l = fresh_raw l.raw
let endpoint l = endpoint_raw l.raw

type state = Running | Failed of string | Closed

let state l =
  match state_raw l.job with 0, _ -> Running | 1, why -> Failed why | _ -> Closed

let close l = close_raw l.job

(* For the proxies' stubs. *)
let raw l = l.raw
