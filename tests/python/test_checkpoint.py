"""Checkpoint and resume from Python ends bitwise equal to an uninterrupted
run.

Two ranks train the worker's cnn model in this process (each backward's
hooks send that rank's layers, so the ranks can step one after the other
on one thread) against a real aggregator: once for STEPS steps without a
break, once for RESUME_AT steps, then checkpointed (model weights with
torch.save, optimizer state with state_dict() through torch.save, and the
C++ file format with save_state()), torn down, and resumed by new clients,
models and optimizers for the remaining steps. Parameters and optimizer
state must end the same bits, and the resumed ranks must stay equal to
each other. With share_hold_steps = 3 the resume falls inside a window
(steps 3-5), whose held entropy share the checkpoint must carry.
"""

import pytest
import torch

import entrograd
from fashion_cnn import FashionCnn, batch

WORLD = 2
STEPS = 8
RESUME_AT = 4
OPTIONS = dict(lr=0.05, policy="entropy", rho=0.01, dense_below=1000,
               momentum_correction=True, momentum=0.9)


def make_rank(aggregator, job_id, rank, weights=None, state=None, hold=1):
    torch.manual_seed(5)
    model = FashionCnn()
    if weights is not None:
        model.load_state_dict(weights)
    client = entrograd.Client(shards=[aggregator.address], job_id=job_id, rank=rank,
                              world_size=WORLD)
    optimizer = entrograd.DistributedOptimizer(model.named_parameters(), client,
                                               state=state, share_hold_steps=hold,
                                               **OPTIONS)
    return model, client, optimizer


def train(ranks, first, last):
    for step in range(first, last):
        for rank, (model, _, optimizer) in enumerate(ranks):
            assert optimizer.step_count == step
            images, labels = batch(seed=1000 * step + rank)
            torch.nn.functional.cross_entropy(model(images), labels).backward()
        for _, _, optimizer in ranks:
            optimizer.step()


def parameters_of(model):
    return [p.detach().clone() for p in model.parameters()]


def assert_same_bits(a, b, what):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert torch.equal(x.view(torch.int32), y.view(torch.int32)), f"{what} {i}"


def assert_same_state(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], torch.Tensor):
            assert torch.equal(a[key].view(torch.int32), b[key].view(torch.int32)), key
        else:
            assert a[key] == b[key], key


@pytest.mark.parametrize("hold", [1, 3])
@pytest.mark.parametrize("via", ["state_dict", "save_state"])
def test_resume_equals_uninterrupted(tmp_path, aggregator, via, hold):
    straight = [make_rank(aggregator, f"straight-{via}-{hold}", r, hold=hold)
                for r in range(WORLD)]
    train(straight, 0, STEPS)

    first = [make_rank(aggregator, f"resumed-{via}-{hold}", r, hold=hold)
             for r in range(WORLD)]
    train(first, 0, RESUME_AT)
    for rank, (model, client, optimizer) in enumerate(first):
        torch.save(model.state_dict(), tmp_path / f"model-{rank}.pt")
        if via == "state_dict":
            torch.save(optimizer.state_dict(), tmp_path / f"optimizer-{rank}.pt")
        else:
            optimizer.save_state(tmp_path / f"optimizer-{rank}.pt")
        client.close()
    del first

    resumed = []
    for rank in range(WORLD):
        weights = torch.load(tmp_path / f"model-{rank}.pt")
        state_path = tmp_path / f"optimizer-{rank}.pt"
        state = torch.load(state_path) if via == "state_dict" else state_path
        resumed.append(make_rank(aggregator, f"resumed-{via}-{hold}", rank, weights,
                                 state, hold=hold))
        assert resumed[-1][2].step_count == RESUME_AT
    train(resumed, RESUME_AT, STEPS)

    for rank in range(WORLD):
        assert_same_bits(parameters_of(resumed[rank][0]), parameters_of(straight[rank][0]),
                         f"rank {rank} parameter")
        assert_same_state(resumed[rank][2].state_dict(), straight[rank][2].state_dict())
    assert_same_bits(parameters_of(resumed[0][0]), parameters_of(resumed[1][0]),
                     "replica parameter")
    # Training moved the weights and the compressed layers kept residuals.
    torch.manual_seed(5)
    assert not torch.equal(parameters_of(FashionCnn())[0], parameters_of(straight[0][0])[0])
    assert straight[0][2].state_dict()["residual_4"].abs().sum() > 0
    # The held share is in the state exactly when a share is held.
    assert ("held_share_4" in straight[0][2].state_dict()) == (hold > 1)
    for _, client, _ in straight + resumed:
        client.close()
