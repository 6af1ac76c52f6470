(** A timeline word: 8 aligned bytes outside the OCaml heap (allocated by C, never moved),
    holding an unsigned 64-bit value in the host's byte order. A proxy made with it writes it
    from its link's receiving thread; the bytes are freed once this value is unreachable and
    every proxy made with it has let go (docs/SEMANTICS.md, "The OCaml module"). *)
type t

(** [make ?value ()] is a new word holding [value] (default 0). *)
val make : ?value:int -> unit -> t

(** [get w] is the word's value, read with acquire order. *)
val get : t -> int

(** [address w] is the word's host address in this process. *)
val address : t -> nativeint
