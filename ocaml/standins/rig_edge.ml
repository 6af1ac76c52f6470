(* Only types, and the driver's signature: see rig_edge.mli. *)
type memory = Device | Host

type location = { address : nativeint option; host : nativeint option; handle : nativeint }

type 'r mapping = 'r option

type completion = Host

type waits = { hosts : bool; most : int }

type capability = ..

type 'r facts = {
  arch : Rig.arch;
  budget : int;
  queues : string list;
  copy_engine : (int * string) option;
  completion : completion;
  waits : waits;
  may_block : bool;
  hang_ms : int option;
  maps_host : bool;
  host_addresses : bool;
  cache_bytes : int;
  capability : capability;
  word : 'r option;
  bus : string option;
}

type dma = Bus of { address : int64 }

type ('r, 'i) code = Loaded of 'i | Place of 'r * 'i

type entry_answer = Entry of int | Absent | No_memory of int

type grown = Grown | Short of int

type c_functions = { room : nativeint; submit : nativeint; commit : nativeint; handle : nativeint }

module type Driver = sig
  type t
  type region
  type image

  exception Fault of string

  val key : t Rig_type.Id.t
  val facts : t -> region facts
  val alloc : t -> memory -> int -> region option
  val free : t -> region -> unit
  val locate : region -> location
  val peer : t -> t -> bool
  val map_peer : t -> t -> region -> region mapping
  val map_host : t -> int -> int -> region mapping
  val dma : t -> region -> fn:string -> (dma, string) result
  val image : t -> string -> ((region, image) code, string) result
  val entry : image -> string -> entry_answer
  val prepare : image -> string -> unit
  val unload : t -> image -> unit
  val grow : t -> grown
  val signaled : t -> int
  val sleep : t -> seen:int -> still_ms:int -> unit
  val stop : t -> fault:string option -> unit
  val c_functions : t -> c_functions
end
