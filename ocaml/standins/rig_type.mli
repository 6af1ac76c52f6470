(** Stand-in for [Stdlib.Type] (OCaml 5.1), which OCaml 4.13 lacks: the page's [key] is a
    [t Stdlib.Type.Id.t]; here it is a [t Rig_type.Id.t], a witness of the same shape, made the
    same way (an extensible GADT). A build on OCaml >= 5.1 uses [Stdlib.Type] instead. *)

(** Proof that two types are equal. *)
type (_, _) eq = Equal : ('a, 'a) eq

module Id : sig
  (** A witness of type ['a]. *)
  type !'a t

  (** [make ()] is a new witness, different from every other. *)
  val make : unit -> 'a t

  (** [uid id] is an integer that differs between witnesses. *)
  val uid : 'a t -> int

  (** [provably_equal i j] is [Some Equal] iff [i] and [j] are the same witness. *)
  val provably_equal : 'a t -> 'b t -> ('a, 'b) eq option
end
