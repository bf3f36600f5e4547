"""What `vta-sim model` makes of one generated model, run in process as the command line runs it.

`run_case` saves the model (and its inputs) to files, parses the command line
`vta-sim model FILE.onnx [--quantizer Q] [--input ...] --quiet --json OUT` with the CLI's own
parser and calls the command, as `vta_sim.cli.main` does, and sorts what came back:

- `verified`: exit 0;
- `refused`: a toolkit error (exit 2) whose message is one line; `internal` is set where the
  error boundary (graph.errors.stage) caught something that is neither a toolkit error nor a
  third-party library's (a bug of the graph level that still reached the user as one line);
- `not_verified`: exit 1, the accelerator's run differed from the CPU build's;
- `traceback`: any other exception, what the user would have seen as a Python traceback.

Each outcome has a `key`: the class it belongs to (the exception type and the innermost frame
of the toolkit's code for a traceback, the message with its numbers and names blanked for a
refusal), so that a long run reports classes, not examples.
"""
from __future__ import annotations

import contextlib
import io
import re
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from vta_sim.errors import VTAError

#: Packages whose errors are a third party's refusal, not a bug of the toolkit.
THIRD_PARTY = ("onnxruntime", "tvm", "tvm_ffi", "onnx", "google.protobuf")
#: Outcomes that are a finding (tests/graph/test_graph_fuzz.py fails on them).
FINDINGS = ("traceback", "not_verified", "multi_line")


@dataclass
class Outcome:
    kind: str            # verified | refused | not_verified | traceback | multi_line
    key: str             # its class
    message: str         # the refusal's line, or the exception's last line
    internal: bool = False
    detail: str = ""     # the traceback, for a finding

    @property
    def finding(self) -> bool:
        return self.kind in FINDINGS


def argv_of(case, folder: Path) -> list:
    """The command line that runs `case` (graph.fuzz.models.Case), its files written to `folder`."""
    path = folder / "model.onnx"
    onnx.save(case.model, str(path))
    argv = ["model", str(path), "--quiet", "--json", str(folder / "result.json")]
    if case.quantizer:
        argv += ["--quantizer", case.quantizer]
    if case.give_inputs:
        for name, value in case.feeds.items():
            np.save(folder / f"{name}.npy", value)
            argv += ["--input", f"{name}={folder / f'{name}.npy'}"]
    return argv


def run_argv(argv: list) -> tuple:
    """(exit status, the toolkit error or None, stdout + stderr) of `vta-sim ARGV` in process;
    any other exception propagates, as it would out of `vta_sim.cli.main`."""
    from vta_sim.cli import build_parser, plugins_for

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        args = build_parser(plugins_for(argv)).parse_args(argv)
        try:
            return args.func(args), None, out.getvalue()
        except VTAError as err:
            return 2, err, out.getvalue()


def run_case(case, keep: Path | None = None) -> Outcome:
    """The outcome of `case`; its files (model, inputs, result.json) are left in `keep` if given."""
    with tempfile.TemporaryDirectory(prefix="vta-fuzz-") as tmp:
        argv = argv_of(case, Path(keep or tmp))
        try:
            rc, err, _ = run_argv(argv)
        except Exception as exc:  # noqa: BLE001 - a traceback the user would have seen: the finding
            return Outcome("traceback", _traceback_key(exc), _last_line(exc), detail=traceback.format_exc())
    if rc == 0:
        return Outcome("verified", "verified", "")
    if rc == 1:
        return Outcome("not_verified", "not verified: the accelerator differed from the CPU build", "")
    message = str(err)
    if "\n" in message.strip():
        return Outcome("multi_line", "a refusal of more than one line", message)
    cause = err.__cause__
    internal = cause is not None and not isinstance(cause, VTAError) and not _third_party(cause)
    return Outcome("refused", _refusal_key(message), message, internal=internal,
                   detail="".join(traceback.format_exception(cause)) if internal else "")


def _last_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[-1] if lines else ''}"[:300]


def _third_party(exc: BaseException) -> bool:
    """Was `exc` raised inside a third-party library: its type is one of theirs, or the frame
    after the toolkit's innermost one is theirs (TVM's FFI appends its C++ frames after it)?"""
    if (type(exc).__module__ or "").startswith(THIRD_PARTY):
        return True
    frames = traceback.extract_tb(exc.__traceback__)
    root = str(Path(__file__).resolve().parents[2])
    own = [i for i, f in enumerate(frames) if f.filename.startswith(root) and "site-packages" not in f.filename]
    after = frames[own[-1] + 1:] if own else frames
    return bool(after) and any(f"/{p.replace('.', '/')}/" in after[0].filename or "site-packages" in
                               after[0].filename for p in THIRD_PARTY)


def _traceback_key(exc: BaseException) -> str:
    """The exception type and the innermost frame in the toolkit's own code (else the innermost)."""
    frames = traceback.extract_tb(exc.__traceback__)
    root = str(Path(__file__).resolve().parents[2])
    own = [f for f in frames if f.filename.startswith(root) and "site-packages" not in f.filename]
    frame = (own or frames)[-1] if frames else None
    where = f"{Path(frame.filename).relative_to(root) if frame.filename.startswith(root) else Path(frame.filename).name}" \
            f":{frame.name}" if frame else "?"
    return f"{type(exc).__name__} in {where}"


def _refusal_key(message: str) -> str:
    """The refusal with its numbers, quoted names and shapes blanked (one class per wording)."""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", message)
    text = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", "(_)", text)
    text = re.sub(r"\d+(\.\d+)?", "N", text)
    return text[:120]
