type id = int64

type kind = Host | Simulated | Gpu

type account = {
  id : int;
  kind : kind;
  name : string;
  arch : Rig.arch;
  budget : int;
  cache_bytes : int;
  reaches : int;
}
