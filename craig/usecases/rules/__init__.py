"""Triage rule sets: create a version, read, list, evaluate; and keep every instance's decision
cache true."""

from craig.usecases.rules.create_rule_set import CreateRuleSet, CreateRuleSetWork
from craig.usecases.rules.current_rule_set import CurrentRuleSetWork, current_rule_set
from craig.usecases.rules.evaluate_rule_set import EvaluateRuleSet, EvaluateRuleSetWork
from craig.usecases.rules.evict_on_invalidation import EvictOnInvalidation
from craig.usecases.rules.get_rule_set import GetRuleSet, GetRuleSetWork
from craig.usecases.rules.list_rule_sets import ListRuleSets, ListRuleSetsWork
from craig.usecases.rules.rule_cache import Cached, RuleSetCache

__all__ = [
    "Cached",
    "CreateRuleSet",
    "CreateRuleSetWork",
    "CurrentRuleSetWork",
    "EvaluateRuleSet",
    "EvaluateRuleSetWork",
    "EvictOnInvalidation",
    "GetRuleSet",
    "GetRuleSetWork",
    "ListRuleSets",
    "ListRuleSetsWork",
    "RuleSetCache",
    "current_rule_set",
]
