"""The price of a pool's nodes and where it comes from: the pool's own ``price`` (stated in the stack) wins over the
catalog's (catalogs/prices.py). ``plan``'s cost columns and ``simulate --compare-pools`` both read it here, so the
two never price one pool differently."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from gpuplatform.catalogs.prices import CURRENCY, ListPrice, list_price, unpriced_reason

LIST_BASIS = "list (catalog source)"
ESTIMATE_BASIS = "estimate"
STATED_BASIS = "stated in the stack: {source}"


@dataclass(frozen=True)
class NodePrice:
    """Per node-hour at the cheapest and dearest of the pool's instance types (the autoscaler may start any)."""

    cheapest: Optional[float]
    dearest: Optional[float]
    basis: str
    """``list (catalog source)``, ``estimate`` (any instance type priced by an estimate) or ``stated in the stack:
    <source>``; empty when unknown."""
    currency: str = CURRENCY
    reason: str = ""
    """Why the price is unknown (only then)."""
    catalog: list[ListPrice] = field(default_factory=list)
    """The catalog entries used (none for a stated price)."""

    @property
    def known(self) -> bool:
        return self.dearest is not None

    @property
    def stated(self) -> bool:
        return self.known and not self.catalog


def node_price(instance_types: list[str], stated=None, remedy: Optional[str] = None) -> NodePrice:
    """``stated``: the pool's ``price`` (components.config.Price) or None; ``remedy``: what the reason of an unknown
    price advises (default: state it as ``nodePools[].price``)."""
    if stated is not None:
        return NodePrice(stated.per_hour, stated.per_hour, STATED_BASIS.format(source=stated.source),
                         stated.currency)
    prices = [list_price(t) for t in instance_types]
    if not prices or any(p is None for p in prices):
        return NodePrice(None, None, "", reason=unpriced_reason(instance_types, *([] if remedy is None else [remedy])))
    basis = ESTIMATE_BASIS if any(p.basis == "estimate" for p in prices) else LIST_BASIS
    return NodePrice(min(p.per_hour for p in prices), max(p.per_hour for p in prices), basis, catalog=prices)
