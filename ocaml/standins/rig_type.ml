type (_, _) eq = Equal : ('a, 'a) eq

module Id = struct
  type _ witness = ..

  module type ID = sig
    type t

    type _ witness += Id : t witness
  end

  type 'a t = (module ID with type t = 'a)

  let make (type a) () : a t =
    (module struct
      type t = a

      type _ witness += Id : t witness
    end)

  let uid (type a) ((module M) : a t) =
    Obj.Extension_constructor.id (Obj.Extension_constructor.of_val M.Id)

  let provably_equal (type a b) ((module A) : a t) ((module B) : b t) : (a, b) eq option =
    match A.Id with B.Id -> Some Equal | _ -> None
end
