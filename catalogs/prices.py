"""List prices of the GPU instance types, for the cost `gpuplatform plan` shows per pool (pay-as-you-go, compute
only: no disks, bandwidth, SLB or the ACK Pro cluster fee).

Every figure names where it comes from, the region and the date it was read, and its basis:

- ``list``: Alibaba Cloud's own published list price for the instance type, region and date given.
- ``estimate``: no Alibaba list price was retrieved; the figure stands in for one by the stated method, so the
  plan can still show an order of magnitude. The plan marks it as an estimate.

Instance types without an entry have no price here: the plan says so (``unpriced_reason``) instead of guessing.
A price negotiated with Alibaba, or the list price of your region, belongs in the stack: ``nodePools[].price``
(``perHour``, ``currency``, ``source``) overrides this catalog for that pool, and the plan says which one it used.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

HOURS_PER_MONTH = 730
"""365 x 24 / 12: the month the cloud price calculators bill an always-on instance for."""
CURRENCY = "USD"
CURRENCIES = (CURRENCY,)
"""The currencies a price may be stated in: the catalog's one, so a stated price and a catalog price add up."""


@dataclass(frozen=True)
class ListPrice:
    instance_type: str
    per_hour: float
    """USD per instance-hour, pay-as-you-go."""
    basis: Literal["list", "estimate"]
    region: str
    """The region the figure is for (an estimate: the region of the figure it stands on)."""
    retrieved: str
    """Date the source was read (YYYY-MM-DD)."""
    source: str
    method: str = ""
    """How an estimate was derived from its source."""


_AWS_8X_A100_40GB = ListPrice(
    "ecs.ebmgn7.26xlarge", 21.957642, "estimate", "us-east-1 (AWS)", "2026-11-09",
    "https://raw.githubusercontent.com/datareceipts/data-receipts/main/109-gpu-pricing/hyperscalers.json",
    "AWS on-demand list price of p4d.24xlarge, the hyperscaler instance with the same GPUs (8 x A100 SXM 40GB), "
    "as that dataset lists it; Alibaba's price for ebmgn7.26xlarge in cn-shanghai was not retrieved")

_AWS_8X_A100_80GB = ListPrice(
    "ecs.ebmgn7e.32xlarge", 27.44705, "estimate", "us-east-1 (AWS)", "2026-11-09", _AWS_8X_A100_40GB.source,
    "AWS on-demand list price of p4de.24xlarge, the hyperscaler instance with the same GPUs (8 x A100 SXM 80GB), "
    "as that dataset lists it; Alibaba's price for ebmgn7e.32xlarge was not retrieved")

PRICES: dict[str, ListPrice] = {p.instance_type: p for p in (_AWS_8X_A100_40GB, _AWS_8X_A100_80GB)}


PRICE_SEARCH = ("searched 2026-11-26, no published per-type figure found: Alibaba's documents send GPU prices to "
                "the console's price calculator, which prices per region and account (ECI billing, "
                "https://www.alibabacloud.com/help/doc-detail/89142.htm), and the DescribePrice reference "
                "(https://help.aliyun.com/document_detail/107829.html) documents the request, not a GPU type's price")
"""Why the GPU types of the stacks (gn6i T4, gn7i A10, gn7e/ebmgn7e A100, the L20 families) carry no list price:
a figure read from a console session is an account's price on a day, not a public list price anyone can check."""


def list_price(instance_type: str) -> Optional[ListPrice]:
    return PRICES.get(instance_type)


def unpriced_reason(instance_types: list[str], remedy: str = "state yours as nodePools[].price") -> str:
    """Why a pool of these instance types has no catalog price, and what to do about it."""
    missing = [t for t in instance_types if t not in PRICES]
    return (f"no list price in catalogs/prices.py for {', '.join(missing) or 'the pool'} (no published figure "
            "found: catalogs/prices.py PRICE_SEARCH)" + (f"; {remedy}" if remedy else ""))
