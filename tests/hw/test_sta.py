"""hw/sta.py against hand-computed arrival times on a small SDF in nextpnr's form."""
from hw import sta

# r launches (clock-to-out 500 ps); two routes reach s.M: through lut1 (1000 + 200 + 800) and
# through lut2 (300 + 200 + 400); t.M is 300 ps from r. Setup 100 ps everywhere.
SDF = r"""(DELAYFILE
  (SDFVERSION "3.0")
  (TIMESCALE 1ps)
  (CELL
    (CELLTYPE "top")
    (INSTANCE )
    (DELAY
      (ABSOLUTE
        (INTERCONNECT r_TRELLIS_FF_Q_3/Q lut1\$x/A (900:950:1000) (900:950:1000))
        (INTERCONNECT r_TRELLIS_FF_Q_3/Q lut2/B (300:300:300) (300:300:300))
        (INTERCONNECT r_TRELLIS_FF_Q_3/Q t_TRELLIS_FF_Q/M (300:300:300) (300:300:300))
        (INTERCONNECT lut1\$x/F s_TRELLIS_FF_Q_1/M (800:800:800) (800:800:800))
        (INTERCONNECT lut2/F s_TRELLIS_FF_Q_1/M (400:400:400) (400:400:400))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE r_TRELLIS_FF_Q_3)
    (DELAY
      (ABSOLUTE
        (IOPATH CLK Q (430:477:500) (430:477:500))
      )
    )
    (TIMINGCHECK
      (SETUPHOLD (posedge M) (posedge CLK) (100:100:100) (0:0:0))
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_COMB")
    (INSTANCE lut1\$x)
    (DELAY
      (ABSOLUTE
        (IOPATH A F (200:200:200) (200:200:200))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_COMB")
    (INSTANCE lut2)
    (DELAY
      (ABSOLUTE
        (IOPATH B F (200:200:200) (200:200:200))
      )
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE s_TRELLIS_FF_Q_1)
    (DELAY
      (ABSOLUTE
        (IOPATH CLK Q (430:477:500) (430:477:500))
      )
    )
    (TIMINGCHECK
      (SETUPHOLD (posedge M) (posedge CLK) (100:100:100) (0:0:0))
    )
  )
  (CELL
    (CELLTYPE "TRELLIS_FF")
    (INSTANCE t_TRELLIS_FF_Q)
    (TIMINGCHECK
      (SETUPHOLD (posedge M) (posedge CLK) (100:100:100) (0:0:0))
    )
  )
)
"""


def test_latest_arrival_takes_the_slow_corner_and_the_longer_route():
    arcs, launch, setup = sta.parse_sdf(SDF)
    arrive, prev = sta.arrivals(arcs, launch)
    assert launch == {("r_TRELLIS_FF_Q_3", "Q"): 0.5, ("s_TRELLIS_FF_Q_1", "Q"): 0.5}
    assert arrive[("s_TRELLIS_FF_Q_1", "M")] == 0.5 + 1.0 + 0.2 + 0.8
    assert prev[("s_TRELLIS_FF_Q_1", "M")] == ("lut1$x", "F")
    assert arrive[("t_TRELLIS_FF_Q", "M")] == 0.5 + 0.3
    assert setup[("s_TRELLIS_FF_Q_1", "M")] == 0.1


def test_failing_groups_name_the_rtl_registers(tmp_path):
    (tmp_path / "d.sdf").write_text(SDF)
    timed, failing, groups = sta.failing_groups(tmp_path / "d.sdf", 2.0)
    assert (timed, failing) == (2, 1)          # s.M and t.M (no launch reaches r.M)
    assert groups == [sta.PathGroup("r", "s", 1, 2.6, ("lut1",))]
    assert sta.failing_groups(tmp_path / "d.sdf", 2.6)[1] == 0
