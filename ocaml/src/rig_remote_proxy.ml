(* Rig_remote_proxy over the C ABI: the stubs (rig_ml_*.c) return plain tuples, which this
   module turns into the page's types. *)
module Wire = Wire
module Link = Link
module Word = Word

type t
type region
type image

type device = {
  name : string;
  link : Link.t;
  account : Wire.account;
  capability : Rig_remote_abi.t;
}

exception Fault = Errors.Fault

let key : t Rig_type.Id.t = Rig_type.Id.make ()
let device link (account : Wire.account) capability = { name = account.name; link; account; capability }

external make_raw : Link.raw -> int -> int -> int -> Word.t -> t = "rig_ml_proxy_make"

let capability_ints = function Rig_remote_abi.Host () -> (0, 0) | Rig_remote_abi.Device { id } -> (1, id)

let make d ~word =
  let kind, id = capability_ints d.capability in
  make_raw (Link.raw d.link) d.account.id kind id word

let capability_of kind id = if kind = 0 then Rig_remote_abi.Host () else Rig_remote_abi.Device { id }

(* The facts' fields in the stub's order. *)
type raw_facts = {
  arch : string;
  budget : int;
  cache_bytes : int;
  copy_engine : int;
  waits_most : int;
  may_block : bool;
  maps_host : bool;
  host_addresses : bool;
  cap_kind : int;
  cap_id : int;
  word : region;
  n_queues : int;
  has_hang_ms : bool;
  hang_ms : int;
  has_bus : bool;
}

external facts_raw : t -> raw_facts = "rig_ml_proxy_facts"

let queue_names = [| "COMPUTE:0"; "COPY:0" |]

let facts d : region Rig_edge.facts =
  let f = facts_raw d in
  let queues = List.init (min f.n_queues (Array.length queue_names)) (Array.get queue_names) in
  {
    arch = f.arch;
    budget = f.budget;
    queues;
    copy_engine = (if f.copy_engine > 0 then Some (f.copy_engine, "COPY:0") else None);
    completion = Host;
    waits = { hosts = true; most = f.waits_most };
    may_block = f.may_block;
    hang_ms = (if f.has_hang_ms then Some f.hang_ms else None);
    maps_host = f.maps_host;
    host_addresses = f.host_addresses;
    cache_bytes = f.cache_bytes;
    capability = Rig_remote_abi.declare (capability_of f.cap_kind f.cap_id);
    word = Some f.word;
    bus = (if f.has_bus then Some "" else None);
  }

external alloc_raw : t -> int -> int -> region option = "rig_ml_proxy_alloc"

let alloc d (m : Rig_edge.memory) n = alloc_raw d (match m with Device -> 0 | Host -> 1) n

external free : t -> region -> unit = "rig_ml_proxy_free"

external locate_raw : region -> nativeint * nativeint * nativeint * bool * bool
  = "rig_ml_region_locate"

let locate r : Rig_edge.location =
  let address, host, handle, has_address, has_host = locate_raw r in
  {
    address = (if has_address then Some address else None);
    host = (if has_host then Some host else None);
    handle;
  }

external peer : t -> t -> bool = "rig_ml_proxy_peer"
external map_peer : t -> t -> region -> region option = "rig_ml_proxy_map_peer"
external map_host : t -> int -> int -> region option = "rig_ml_proxy_map_host"
external dma_raw : t -> region -> string -> string = "rig_ml_proxy_dma"

let dma d r ~fn : (Rig_edge.dma, string) result = Error (dma_raw d r fn)

external image_raw : t -> string -> (image, string) result = "rig_ml_proxy_image"

let image d b = Result.map (fun i -> Rig_edge.Loaded i) (image_raw d b)

external entry_raw : image -> string -> int * int = "rig_ml_image_entry"

let entry i f : Rig_edge.entry_answer =
  match entry_raw i f with 0, n -> Entry n | 1, _ -> Absent | _, n -> No_memory n

external prepare : image -> string -> unit = "rig_ml_image_prepare"
external unload : t -> image -> unit = "rig_ml_proxy_unload"
external grow_raw : t -> int = "rig_ml_proxy_grow"

let grow d : Rig_edge.grown = match grow_raw d with -1 -> Grown | n -> Short n

external signaled : t -> int = "rig_ml_proxy_signaled" [@@noalloc]
external sleep_raw : t -> int -> int -> unit = "rig_ml_proxy_sleep"

let sleep d ~seen ~still_ms = sleep_raw d seen still_ms

external stop_raw : t -> string option -> unit = "rig_ml_proxy_stop"

let stop d ~fault = stop_raw d fault

external c_functions_raw : t -> nativeint * nativeint * nativeint * nativeint
  = "rig_ml_proxy_c_functions"

let c_functions d : Rig_edge.c_functions =
  let room, submit, commit, handle = c_functions_raw d in
  { room; submit; commit; handle }

external capability_raw : t -> int * int = "rig_ml_proxy_capability"

let capability d =
  let kind, id = capability_raw d in
  capability_of kind id

external name : t -> string = "rig_ml_proxy_name"

(* The page: this module matches Rig_edge.Driver. *)
module Matches_driver : Rig_edge.Driver with type t = t = struct
  type nonrec t = t
  type nonrec region = region
  type nonrec image = image

  exception Fault = Fault

  let key = key
  let facts = facts
  let alloc = alloc
  let free = free
  let locate = locate
  let peer = peer
  let map_peer = map_peer
  let map_host = map_host
  let dma = dma
  let image = image
  let entry = entry
  let prepare = prepare
  let unload = unload
  let grow = grow
  let signaled = signaled
  let sleep = sleep
  let stop = stop
  let c_functions = c_functions
end
