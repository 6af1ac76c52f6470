type t

external make_raw : int -> t = "rig_ml_word_make"
external get : t -> int = "rig_ml_word_get" [@@noalloc]
external address : t -> nativeint = "rig_ml_word_address"

let make ?(value = 0) () = make_raw value
