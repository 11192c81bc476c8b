"""The replication of the HAT report's comparison (`hat experiment replicate`): profiles,
the lite harness for CPU runs, the run and its report."""
