type arch = string

let word = 4

exception Out_of_memory of int
