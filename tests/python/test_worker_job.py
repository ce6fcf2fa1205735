"""A two-rank job across languages: rank 0 is this Python process
(entrograd.DistributedOptimizer on the worker's cnn model written in
Python, tests/python/fashion_cnn.py), rank 1 the C++ entrograd-worker,
both against a real entrograd-aggregator.

Same initial weights from one file: the Python model is written with
save_cpp_module as <out>/checkpoint/model.pt, next to the Python
optimizer's step-0 state (save_state: optimizer.pt) and the step file, and
the worker resumes from that checkpoint. (Both also build the same weights
from the seed, LibTorch's init being the same code and generator in both
languages; the worker's Join carries the hash of those, so the shard would
refuse the job if they differed.)

For STEPS steps each rank reports the hash of its parameters after the
step (the worker in its "step" event lines); every step's hashes must be
equal, and the worker's final checkpoint, read back with load_cpp_module,
must be the Python parameters bit for bit.
"""

import json
import subprocess
import tempfile
import threading

import torch

import entrograd
from conftest import binary_path
from fashion_cnn import FashionCnn, batch

STEPS = 20
SEED = 7
JOB = "python-and-cpp"
# entrograd-worker's defaults (worker_flags.cc), spelled out: both ranks
# must agree on what is sent whole and on the update rule.
OPTIONS = dict(lr=0.1, policy="entropy", rho=0.01, intervals=256, dense_below=1000,
               warmup_steps=0, momentum_correction=True, momentum=0.9)


def write_worker_checkpoint(out_dir, model, optimizer):
    checkpoint = out_dir / "checkpoint"
    checkpoint.mkdir(parents=True)
    entrograd.save_cpp_module(model, checkpoint / "model.pt")
    optimizer.save_state(checkpoint / "optimizer.pt")
    (checkpoint / "step").write_text(f"{optimizer.step_count}\n")


def start_worker(aggregator, out_dir, stderr):
    return subprocess.Popen(
        [binary_path("ENTROGRAD_WORKER"), f"--shards={aggregator.address}",
         f"--job_id={JOB}", "--world_size=2", "--rank=1", f"--max_steps={STEPS}",
         f"--seed={SEED}", "--batch_size=16", "--threads=1", f"--out={out_dir}",
         "--resume=true", f"--checkpoint_interval={STEPS}", "--model=cnn",
         f"--lr={OPTIONS['lr']}", f"--momentum={OPTIONS['momentum']}",
         f"--rho={OPTIONS['rho']}", f"--dense_below={OPTIONS['dense_below']}",
         "--policy=entropy"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True)


def test_python_rank_and_cpp_worker_stay_bitwise_equal(tmp_path, aggregator):
    torch.manual_seed(SEED)
    model = FashionCnn()
    client = entrograd.Client(shards=[aggregator.address], job_id=JOB, rank=0,
                              world_size=2)
    optimizer = entrograd.DistributedOptimizer(model.named_parameters(), client,
                                               **OPTIONS)
    out_dir = tmp_path / "worker"
    write_worker_checkpoint(out_dir, model, optimizer)

    worker_lines = []
    with tempfile.TemporaryFile() as stderr:
        worker = start_worker(aggregator, out_dir, stderr)
        reader = threading.Thread(
            target=lambda: worker_lines.extend(worker.stdout), daemon=True)
        reader.start()
        try:
            python_hashes = []
            stats = []
            for step in range(STEPS):
                images, labels = batch(seed=step)
                torch.nn.functional.cross_entropy(model(images), labels).backward()
                stats.append(optimizer.step())
                python_hashes.append(entrograd.hash_parameters(list(model.parameters())))
            code = worker.wait(timeout=300)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        reader.join(timeout=10)
        stderr.seek(0)
        worker_stderr = stderr.read().decode("utf-8", "replace")[-4000:]
    assert code == 0, f"entrograd-worker exited {code}:\n{worker_stderr}"
    client.close()

    events = [json.loads(line) for line in worker_lines if line.startswith("{")]
    start = next(e for e in events if e["event"] == "start")
    assert start["first_step"] == 0 and start["layers"] == 8
    worker_hashes = {e["step"]: e["params_hash"] for e in events if e["event"] == "step"}
    assert sorted(worker_hashes) == list(range(STEPS))
    for step in range(STEPS):
        assert worker_hashes[step] == f"{python_hashes[step]:016x}", f"step {step}"
    assert len(set(python_hashes)) == STEPS  # the weights moved every step

    # The worker's last checkpoint (C++ torch::save) holds the same bits.
    from_worker = FashionCnn()
    entrograd.load_cpp_module(from_worker, out_dir / "checkpoint" / "model.pt")
    for (name, a), b in zip(model.named_parameters(), from_worker.parameters()):
        assert torch.equal(a.detach().view(torch.int32), b.detach().view(torch.int32)), name
    worker_state = entrograd._C.read_state_file(str(out_dir / "checkpoint" / "optimizer.pt"))
    assert worker_state["step"] == STEPS and worker_state["layers"] == 8

    uplink = sum(s.uplink_wire_bytes for s in stats)
    dense = sum(s.uplink_dense_bytes for s in stats)
    print(f"python rank: {STEPS} steps, uplink {uplink} B of {dense} B dense "
          f"({dense / max(uplink, 1):.1f}x), compress "
          f"{sum(s.compress_seconds for s in stats) / STEPS * 1e3:.2f} ms/step, wait "
          f"{sum(s.wait_seconds for s in stats) / STEPS * 1e3:.2f} ms/step")
