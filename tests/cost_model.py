"""The check every tiled op's tests share: measured cycles against the cycle model's estimate."""


def assert_cycles_follow_the_model(op, cfg, shape, runs) -> None:
    """`runs`: two (tiles, RunResult) of `op` (a schedules.tiled_op.TiledOp) on `shape`. Each
    takes at least the MAC-bound cycles and is within 50 % of its estimate, and the model ranks
    the two as they ran where it tells them apart (by more than TIE)."""
    ideal = shape.macs() / cfg.macs_per_cycle
    estimates = [op.estimate_cycles(cfg, shape, t) for t, _ in runs]
    for (_, result), estimate in zip(runs, estimates):
        assert ideal <= result.cycles and abs(result.cycles / estimate - 1) < 0.5
    (_, first), (_, second) = runs
    if abs(estimates[1] / estimates[0] - 1) > TIE:
        assert (second.cycles < first.cycles) == (estimates[1] < estimates[0])


#: Estimates closer than this are a tie for a model that is only within 50 %: no ranking is claimed.
TIE = 0.01
