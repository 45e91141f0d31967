"""`sluice farm`: an ensemble of serial tasks run under sluice, on local
workers or one worker per MPI rank, with retries, a restart journal and
node-local staging.

Modules, one job each:
  tasks     where tasks come from (a file, a CSV/TOML table, a grid)
  template  filling a command's placeholders per task
  journal   the record of finished tasks that a re-run skips
  inputs    shared read-only inputs copied once per node
  attempt   one run of one task: its environment, tier, output and result
  dispatch  which task goes next: hand-out, retries, stop on SIGTERM
  engine    the loop that keeps a node's worker slots busy
  mpi       the same over MPI ranks: rank 0 hands tasks out
  progress  a progress bar on a terminal, plain lines in batch logs
  summary   what happened: per-task time, failures, I/O from the logs
"""
