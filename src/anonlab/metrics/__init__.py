"""Quality of masked data: the EM4ADOM information-loss, risk and trade-off measures."""

from anonlab.metrics.em4adom import Evaluation, evaluate
from anonlab.metrics.tradeoff import disclosure_risk, score

__all__ = ["Evaluation", "disclosure_risk", "evaluate", "score"]
