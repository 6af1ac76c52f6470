(* The page's Fault, registered so that the stubs raise it. *)
exception Fault of string

let () = Callback.register_exception "rig_remote_proxy.fault" (Fault "")
