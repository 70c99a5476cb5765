"""Foster homes and placements, with the row-locked placement update.

A placement belongs to a case: a principal who cannot see the case gets 404 for the placement,
never 403, so its existence does not leak. The caller's commit may be held by the HTTP
idempotency layer; these use cases never know.
"""

from craig.usecases.placements.case_placement_history import CasePlacementHistory, CasePlacementHistoryWork
from craig.usecases.placements.create_foster_home import CreateFosterHome, CreateFosterHomeWork
from craig.usecases.placements.create_placement import CreatePlacement, CreatePlacementWork
from craig.usecases.placements.get_foster_home import GetFosterHome, GetFosterHomeWork
from craig.usecases.placements.get_placement import GetPlacement, GetPlacementWork
from craig.usecases.placements.list_foster_homes import ListFosterHomes, ListFosterHomesWork
from craig.usecases.placements.update_placement import UpdatePlacement, UpdatePlacementWork

__all__ = [
    "CasePlacementHistory",
    "CasePlacementHistoryWork",
    "CreateFosterHome",
    "CreateFosterHomeWork",
    "CreatePlacement",
    "CreatePlacementWork",
    "GetFosterHome",
    "GetFosterHomeWork",
    "GetPlacement",
    "GetPlacementWork",
    "ListFosterHomes",
    "ListFosterHomesWork",
    "UpdatePlacement",
    "UpdatePlacementWork",
]
