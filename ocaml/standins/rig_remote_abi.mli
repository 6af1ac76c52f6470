(** Stand-in for rig's [Rig_remote_abi]: the capability a proxy is described with, and how a
    facts record declares it. A build with the real rig libraries uses theirs. *)

(** [Host ()]: the machine's host (the page's [Host _]; the stand-in carries nothing the proxy
    reads). [Device { id }]: the agent's device [id]. *)
type t = Host of unit | Device of { id : int }

(** The constructor that [declare] adds to [Rig_edge.capability]. *)
type Rig_edge.capability += Remote of t

(** [declare c] is [c] as a facts record's capability. *)
val declare : t -> Rig_edge.capability
