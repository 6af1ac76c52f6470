(** Stand-in for the parts of rig's [Rig_edge] that the page names: what a driver answers and
    the driver's signature, [Driver]. Only what [Rig_remote_proxy] uses is here; a build with
    the real rig libraries uses theirs. Where the page does not show a type's shape, the shape
    below is this project's reading (docs/SEMANTICS.md, "The OCaml module"). *)

(** A device's kinds of memory. *)
type memory = Device | Host

(** Where a region lies: an address on its device, a host address in this process, and the
    handle the C functions name it by (the page's Memory section). *)
type location = { address : nativeint option; host : nativeint option; handle : nativeint }

(** What [map_peer] and [map_host] answer: [None] where the driver maps nothing. *)
type 'r mapping = 'r option

(** Who reports a device's values done: for a proxy, the host (its link's receiving thread). *)
type completion = Host

(** Which waits a submission may carry: on host words, and at most [most] of them. *)
type waits = { hosts : bool; most : int }

(** A capability that a facts record declares; each ABI library adds its own constructor
    ([Rig_remote_abi.declare]). *)
type capability = ..

(** A device's facts (the page's Facts table). [word] is [Some w] for a driver with a timeline
    word of its own, [w] the word as a region (a proxy's is the word make was given). *)
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

(** How a PCI function reaches a region by DMA (a proxy answers [Error] instead). *)
type dma = Bus of { address : int64 }

(** Loaded code: [Loaded i], or [Place (r, i)] for code whose region [r] rig holds. *)
type ('r, 'i) code = Loaded of 'i | Place of 'r * 'i

(** [entry]'s answers: [Entry f] ([f]: the function's index that a words part names),
    [Absent], or [No_memory n]. *)
type entry_answer = Entry of int | Absent | No_memory of int

(** [grow]'s answers. *)
type grown = Grown | Short of int

(** How rig receives a driver's C functions (the page's "The C functions"): the addresses of
    [rig_proxy_room], [rig_proxy_submit] and [rig_proxy_commit] (rig/edge.h) and the handle they
    take, the proxy's [rig_proxy*]. rig calls them from C; they never enter OCaml. *)
type c_functions = { room : nativeint; submit : nativeint; commit : nativeint; handle : nativeint }

(** The driver's signature: what rig asks of a driver. The page's [Rig_edge.Driver], with
    [c_functions] for the C functions. *)
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
