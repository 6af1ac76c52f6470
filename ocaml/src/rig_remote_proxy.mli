(** Proxies: devices of another machine, driven through its agent (the reference page
    [Rig_remote_proxy], kept beside this repository; each value below says which of its
    sections it implements, and the page is the specification).

    Built over the C ABI of rig-remote (rig/remote.h, rig/edge.h) with C stubs. Substitutions
    for what Debian's OCaml 4.13 and this build lack (docs/SEMANTICS.md, "The OCaml module"):
    - the types the page takes from [Rig_edge], [Rig_remote_abi] and [Rig] come from the
      stand-ins of the findlib package [rig_remote.standins], which hold only what the page
      uses; a build with rig's own libraries uses theirs;
    - [Stdlib.Type.Id] (OCaml 5.1) is [Rig_type.Id], a witness of the same shape;
    - domains are threads: where the page says several domains may call in parallel, several
      threads may, and a call that waits releases the runtime (the master lock) meanwhile;
    - the page's word is a {!Word.t}, and rig receives the C functions as {!c_functions}. *)

(** The protocol's types (the page's [Wire]). *)
module Wire = Wire

(** This process's ends of its job's connections (the page's [Link]). *)
module Link = Link

(** Timeline words, outside the OCaml heap. *)
module Word = Word

(** {1 Proxies} *)

(** The type for proxies. A proxy's handle is let go when the value is unreachable (its
    finaliser never blocks and sends nothing). *)
type t

(** What [device] describes (the page's [device l a c]); [name] is [a.name]. *)
type device = {
  name : string;
  link : Link.t;
  account : Wire.account;
  capability : Rig_remote_abi.t;
}

(** [device l a c] describes the proxy on [l] of the agent's device [a], with capability [c].
    It registers nothing and sends nothing (page: Proxies). *)
val device : Link.t -> Wire.account -> Rig_remote_abi.t -> device

(** [make d ~word] registers the proxy [d] describes, with [word] as its timeline word, and
    sends nothing; its values start after the value [word] holds. Raises [Invalid_argument] for
    a [Host _] capability of an account whose id is not 0, a [Device { id }] whose id is not the
    account's, or a link that has a proxy of the account's device. A make that raises leaves
    no proxy registered: its OCaml values are allocated before the proxy is made. *)
val make : device -> word:Word.t -> t

(** {1 The driver (the page's [include Rig_edge.Driver with type t := t])} *)

(** Memory of a device: an agent object of the job, or a proxy's timeline word. A value;
    [compare] and [Hashtbl.hash] work on it. *)
type region

(** Code loaded on the agent's host. Its handle is let go when the value is unreachable. *)
type image

(** [Fault why]: the job failed (why: its root cause) or its close began ("the job is
    closed"). Any counted call may raise it (page: Timeline, failure and stopping). *)
exception Fault of string

(** Identifies the driver (page: key); a [Rig_type.Id.t] stands for [Stdlib.Type.Id.t]. *)
val key : t Rig_type.Id.t

(** The page's Facts table. *)
val facts : t -> region Rig_edge.facts

(** [alloc d m n]: [n] bytes of the agent's device's memory [m], [None] if the agent lacks the
    room or refuses; [Fault] once the job is over. Releases the runtime while it waits. *)
val alloc : t -> Rig_edge.memory -> int -> region option

(** [free d r] sends the release of [r]'s object after every message sent before; nothing for a
    word or once the job has failed. *)
val free : t -> region -> unit

(** [locate r]: an object's id as handle; a word's device id as address and its host address as
    host, with handle [0n] (page: Memory). *)
val locate : region -> Rig_edge.location

(** [peer d d']: whether [d] and [d'] are proxies of one link and [d]'s device reaches the own
    memory of [d']'s, from the accounts; never blocks. *)
val peer : t -> t -> bool

(** [map_peer d d' r]: a word maps as itself; memory is mapped by the agent as a new object;
    [None] for two links or when the agent cannot; [Fault] if it asks and the job is over. *)
val map_peer : t -> t -> region -> region Rig_edge.mapping

(** [map_host d p n] is [None]: a proxy does not declare [maps_host]. *)
val map_host : t -> int -> int -> region Rig_edge.mapping

(** [dma d r ~fn] is [Error why]: the memory is another machine's. *)
val dma : t -> region -> fn:string -> (Rig_edge.dma, string) result

(** [image d b] loads [b] on the agent's host if [d] is the machine's host: [Ok (Loaded i)],
    or [Error why]; on any other proxy [Error why]. [Fault] on the host once the job is over. *)
val image : t -> string -> ((region, image) Rig_edge.code, string) result

(** [entry i f]: [Entry n] ([n] the index a words part names), [Absent], or [No_memory n];
    [Invalid_argument] with the agent's reason; [Fault] once the job is over. *)
val entry : image -> string -> Rig_edge.entry_answer

(** [prepare i f] may start what [entry i f] makes; reports nothing. *)
val prepare : image -> string -> unit

(** [unload d i] sends the release of [i] after every message sent before. *)
val unload : t -> image -> unit

(** [grow d] is [Grown]: a proxy's room never answers RIG_GROW. *)
val grow : t -> Rig_edge.grown

(** [signaled d] is [d]'s word, read with acquire order; never blocks, never enters rig. *)
val signaled : t -> int

(** [sleep d ~seen ~still_ms] returns once the word differs from [seen] (at once if it does),
    after [still_ms] milliseconds, or when the job's close begins; raises [Fault] once the job
    has failed. Releases the runtime while it waits, so other threads run. *)
val sleep : t -> seen:int -> still_ms:int -> unit

(** [stop d ~fault] writes the last value given to submit into the word once no copy's bytes
    may still land; waits for nothing; ignores [fault] (page: Stopping). *)
val stop : t -> fault:string option -> unit

(** The C functions of [d] (rig/edge.h) and the handle they take; rig calls them from C, one at
    a time per proxy, and they never enter OCaml. [commit] does nothing. *)
val c_functions : t -> Rig_edge.c_functions

(** [capability d] is the record [device] was given, which [facts] declares
    ([Rig_remote_abi.declare]). *)
val capability : t -> Rig_remote_abi.t

(** {1 Beyond the page} *)

(** [name d] is the device's name, as its account gives it. *)
val name : t -> string
