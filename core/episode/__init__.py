"""Playing tasks: one agent-loop run in a world (the live room, or a harness's own tools),
graded by that world's graders. `play` is the one episode function every caller uses
(evaluation, teacher data, RL rewards, the latency bench, the gold runs)."""
