(** Stand-in for the parts of rig's [Rig] that the page names: [Rig.arch], [Rig.word] and
    [Rig.Out_of_memory]. A build with the real rig libraries uses theirs. *)

(** A device's architecture, as an account gives it ("sim", "x86_64", "sm_90"). *)
type arch = string

(** [word] is 4: the bytes of a buffer's word (Rig's Words section). *)
val word : int

(** [Out_of_memory n]: rig found no memory for [n] bytes after its rounds of reclamation. *)
exception Out_of_memory of int
