(** The protocol between the processes of a job (the page's [Wire]): the types the page names.
    The codec is the C++ library's ([wire/]); OCaml holds no codec. *)

(** An id of the job naming an agent object ([Link.fresh]). *)
type id = int64

(** What kind of device an account describes. *)
type kind = Host | Simulated | Gpu

(** The agent's answer for a device it opened. [reaches]: bit [i] is set iff this device
    reaches the own memory of device [i] (the page's [peer]: the account with the larger id
    describes it). *)
type account = {
  id : int;
  kind : kind;
  name : string;
  arch : Rig.arch;
  budget : int;
  cache_bytes : int;
  reaches : int;
}
