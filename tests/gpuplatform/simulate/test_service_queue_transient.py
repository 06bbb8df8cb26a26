"""The fluid queue against the exact transient mean of the same M/M/c replica.

docs/real-loop.md, disagreement 3: the fluid (``dx/dt = lambda - mu rho(x)``) overstates the first seconds of an
overload and empties a backlog too early. The reference here is exact, not sampled: the forward Kolmogorov equations
of one replica's birth-death chain, solved over each second by uniformization (the mean a Monte Carlo of per-replica
servers converges to). These tests pin the figures the docs give for the fluid's bias, and show why a model of the
mean does not remove the disagreement: the exact mean, too, reads above the scenario's target 1.8 s after the step.
"""
from __future__ import annotations

import math

import pytest

from gpuplatform.simulate.service import slots

# one replica of the real loop's vllm-queue-poisson: 4 slots of an exponential 2 s each, steady at 1 req/s
SLOTS, SLOT_RATE, BASE = 4, 0.5, 1.0
OVERLOAD_S, DRAIN_S, DRAIN_RATE_OF = 60, 120, 1 / 6  # then six replicas share the load: the old one drains at 1/6


def _stationary(rate: float, cut: float = 1e-15) -> list:
    p = [1.0]
    while p[-1] > cut * sum(p) or len(p) <= SLOTS:
        p.append(p[-1] * rate / (min(len(p), SLOTS) * SLOT_RATE))
    total = sum(p)
    return [q / total for q in p]


def _chain_step(p: list, rate: float, dt: float = 1.0) -> list:
    """The distribution ``dt`` later: uniformization, ``sum_k Poisson(k; L dt) p P^k`` with ``P = I + Q / L``."""
    big = rate + SLOTS * SLOT_RATE
    margin = int(rate * dt + 8 * math.sqrt(rate * dt + 1) + 4)
    v = list(p) + [0.0] * margin
    n = len(v)
    up = [rate / big] * (n - 1) + [0.0]  # the last state is the cut: nothing leaves it upwards
    down = [min(i, SLOTS) * SLOT_RATE / big for i in range(n)]
    weight = math.exp(-big * dt)
    out = [weight * x for x in v]
    done, k = weight, 0
    while 1 - done > 1e-12:
        k += 1
        v = [v[i] * (1 - up[i] - down[i]) + (v[i - 1] * up[i - 1] if i else 0.0)
             + (v[i + 1] * down[i + 1] if i + 1 < n else 0.0) for i in range(n)]
        weight *= big * dt / k
        done += weight
        out = [o + weight * x for o, x in zip(out, v)]
    while len(out) > SLOTS + 1 and out[-1] < 1e-15:
        out.pop()
    total = sum(out)
    return [o / total for o in out]


def _waiting(p: list) -> float:
    return sum(max(i - SLOTS, 0) * q for i, q in enumerate(p))


def _step_then_drain(high: float) -> tuple[list, list]:
    """Requests waiting each second, exact and fluid: BASE, ``high`` for OVERLOAD_S, then a sixth of it."""
    rates = [high] * OVERLOAD_S + [high * DRAIN_RATE_OF] * DRAIN_S
    queue = slots(SLOTS)
    p, x = _stationary(BASE), queue.x_at_rho(BASE / (SLOTS * SLOT_RATE))
    exact, fluid = [_waiting(p)], [queue.lq(x)]
    for rate in rates:
        p = _chain_step(p, rate)
        x = queue.step(x + rate, SLOTS * SLOT_RATE)
        exact.append(_waiting(p))
        fluid.append(queue.lq(x))
    return exact, fluid


def _bias(fluid: list, exact: list, lo: int, hi: int) -> float:
    return sum(fluid[lo:hi + 1]) / sum(exact[lo:hi + 1]) - 1


def test_the_exact_chain_rests_where_the_fluid_does_below_saturation():
    """The reference has M/M/c's steady state, as the fluid has: the biases below are transient only."""
    queue = slots(SLOTS)
    for rate in (0.5, 1.0, 1.5, 1.8):
        p = _stationary(rate)
        for _ in range(5):
            p = _chain_step(p, rate)
        assert _waiting(p) == pytest.approx(queue.lq_at_rho(rate / (SLOTS * SLOT_RATE)), rel=1e-6)


def test_the_fluid_overstates_an_overload_and_its_drain_by_the_documented_bias():
    """Twice the capacity: +3.1 % over the overload, +2.9 % over the drain; 1.25 times: +15 % and +10 %."""
    exact, fluid = _step_then_drain(4.0)
    assert 0.025 < _bias(fluid, exact, 1, OVERLOAD_S) < 0.04
    assert 0.02 < _bias(fluid, exact, OVERLOAD_S + 1, OVERLOAD_S + DRAIN_S) < 0.04
    emptied = [max(i for i, w in enumerate(series) if w >= 1.0) for series in (fluid, exact)]
    assert emptied == [156, 176]  # the fluid's backlog runs out 20 s before the mean's
    exact, fluid = _step_then_drain(2.5)
    assert 0.13 < _bias(fluid, exact, 1, OVERLOAD_S) < 0.18
    assert 0.08 < _bias(fluid, exact, OVERLOAD_S + 1, OVERLOAD_S + DRAIN_S) < 0.12


def test_the_exact_mean_also_reads_above_target_just_after_the_step():
    """1.8 s after the step the real server read 0 waiting and the fluid 2.9 (docs/real-loop.md, disagreement 3).
    The exact mean reads 2.8, above 2 x 1.1 too, and 0 waiting is a likely reading of one server (p = 0.29): the
    early sync is one sample path against the mean, which a better model of the mean does not remove."""
    p = _stationary(BASE)
    for _ in range(18):
        p = _chain_step(p, 4.0, 0.1)
    assert 2.7 < _waiting(p) < 2.9 and _waiting(p) > 2 * 1.1
    assert 0.27 < sum(p[:SLOTS + 1]) < 0.31

