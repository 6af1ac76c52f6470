(* Code on the machine's host: image, entry, prepare, unload; a words-free check elsewhere. *)
open OUnit2
module P = Rig_remote_proxy
module F = Fixture

(* add.rasm assembled by the build's rig-asm (RIG_ASM_PATH, RIG_PROGRAMS_DIR from CMake). *)
let binary () =
  match (Sys.getenv_opt "RIG_ASM_PATH", Sys.getenv_opt "RIG_PROGRAMS_DIR") with
  | Some asm, Some dir when asm <> "" && dir <> "" ->
      let out = Filename.temp_file "rig-ocaml-add" ".rigp" in
      let cmd = Filename.quote_command asm [ Filename.concat dir "add.rasm"; "-o"; out ] in
      if Sys.command cmd <> 0 then assert_failure "rig-asm failed";
      let ic = open_in_bin out in
      let b = really_input_string ic (in_channel_length ic) in
      close_in ic;
      Sys.remove out;
      Some b
  | _ -> None

let test_code ctx =
  let bin = binary () in
  skip_if (bin = None) "RIG_ASM_PATH or RIG_PROGRAMS_DIR is not set";
  let bin = Option.get bin in
  ignore ctx;
  F.with_agent (fun t ->
      let host = F.proxy t 0 and d1 = F.proxy t 1 in
      (match P.image d1 bin with Error why -> assert_bool "why" (why <> "") | Ok _ -> assert_failure "image on a device");
      (match P.image host "not a program" with Error why -> assert_bool "why" (why <> "") | Ok _ -> assert_failure "garbage loaded");
      match P.image host bin with
      | Error why -> assert_failure ("image: " ^ why)
      | Ok (Rig_edge.Place _) -> assert_failure "Place"
      | Ok (Rig_edge.Loaded i) ->
          P.prepare i "add";
          (match P.entry i "add" with
          | Rig_edge.Entry n -> assert_equal (Rig_edge.Entry n) (P.entry i "add")
          | _ -> assert_failure "entry add");
          assert_equal Rig_edge.Absent (P.entry i "no_such_function");
          P.prepare i "no_such_function";
          P.unload host i)

let tests = "code" >::: [ "image_entry_prepare_unload" >:: test_code ]
