type t = Host of unit | Device of { id : int }

type Rig_edge.capability += Remote of t

let declare c = Remote c
