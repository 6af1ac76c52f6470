(** This process's ends of its job's connections (the page's [Link]): a job connects to one
    agent per machine and fails as a whole; a link is its connections to one agent. *)

(** A job: this process and the agents it connected to. Its handle is let go when the value and
    each of its links are unreachable (never blocking: the library joins its threads itself). *)
type job

(** A link: this process's end of its connections to one machine's agent. *)
type t

(** The socket backends a link may use. *)
type backend = Default | Uring | Plain

(** How {!connect} makes a link; [None] keeps the library's default (docs/ENVIRONMENT.md). *)
type options = {
  secret_file : string option;  (** a file of the job's secret; [None]: [RIG_SECRET_FILE], else [RIG_SECRET], else none *)
  stripes : int option;  (** extra data connections *)
  stripe_min_bytes : int option;  (** copies of fewer bytes stay on the job's connection *)
  backend : backend;
  keepalive_ms : int option;  (** ping the agent after this long without a byte from it *)
  silence_ms : int option;  (** fail the job after this long without a byte from the agent *)
  poll_us : int option;  (** the receiving thread's spin before it sleeps *)
  send_zc_bytes : int option;  (** zero-copy sends from this size *)
}

(** Every field [None], and [Default]. *)
val default_options : options

(** A new job with no link. *)
val job : unit -> job

(** [connect ?options ?job endpoint] connects [job] (a new one if absent) to the agent at
    [endpoint] ("HOST:PORT", "[V6]:PORT"), does the handshake and learns its accounts. It
    releases the runtime while it waits. Raises [Failure] if the agent cannot be reached or the
    handshake fails, [Invalid_argument] for a malformed endpoint or options, and
    [Rig_remote_proxy.Fault] once the job has failed or is closed. *)
val connect : ?options:options -> ?job:job -> string -> t

(** The job [l] belongs to. *)
val job_of : t -> job

(** The accounts of the devices the agent opened: the host (id 0) first, then by id. *)
val accounts : t -> Wire.account list

(** [account l id] is the account of device [id], if the agent opened it. *)
val account : t -> int -> Wire.account option

(** A new id of the job, naming an agent object. *)
val fresh : t -> Wire.id

(** The endpoint given to {!connect}, and the numeric address it reached. *)
val endpoint : t -> string * string

(** Whether a job is over: [Failed why] (its root cause) or [Closed] once its close began. *)
type state = Running | Failed of string | Closed

val state : t -> state

(** [close l] begins the close of [l]'s job: calls that ask an agent then raise
    [Fault "the job is closed"], each agent frees what the job held. Idempotent; waits for
    nothing. *)
val close : t -> unit

(**/**)

(* The link's handle, for Rig_remote_proxy's stubs. *)
type raw

val raw : t -> raw
