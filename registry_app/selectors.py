"""Reads of the registry."""
from registry_app import snapshot
from registry_app.diff import RegistryDiff, registry_diff
from registry_app.errors import RegistryNotLoaded, UnknownLane, UnknownVersion
from registry_app.models import LaneError, RegistryVersion


def current_snapshot() -> snapshot.Snapshot:
    current = snapshot.current()
    if current is None:
        raise RegistryNotLoaded()
    return current


def lanes_matching(current: snapshot.Snapshot, *, capability: str | None = None, status: str | None = None,
                   hosting: str | None = None, provider: str | None = None,
                   language: str | None = None) -> list[snapshot.SnapshotLane]:
    """The lanes of the Snapshot `current` (document order) that pass every given
    filter; a lane without `params.languages` matches any language; `provider`
    ignores case."""
    lanes = current.by_capability.get(capability, ()) if capability else current.lanes
    wanted_provider = provider.casefold() if provider else None
    return [
        lane for lane in lanes
        if (status is None or lane.status == status)
        and (hosting is None or lane.hosting == hosting)
        and (wanted_provider is None or lane.provider.casefold() == wanted_provider)
        and (language is None or lane.speaks(language))
    ]


def lane_by_id(lane_id: str) -> snapshot.SnapshotLane:
    current = snapshot.current()
    lane = current.by_id.get(lane_id) if current is not None else None
    if lane is None:
        raise UnknownLane()
    return lane


def versions() -> list[RegistryVersion]:
    return list(RegistryVersion.objects.newest_first().defer("document_text"))


def version_by_number(number: int) -> RegistryVersion:
    version = RegistryVersion.objects.filter(number=number).first()
    if version is None:
        raise UnknownVersion()
    return version


def previous_version(version: RegistryVersion) -> RegistryVersion | None:
    return RegistryVersion.objects.filter(number__lt=version.number).newest_first().first()


def changes_since_previous(version: RegistryVersion) -> RegistryDiff | None:
    """The RegistryDiff from the version loaded before `version`, or None for the first."""
    previous = previous_version(version)
    return registry_diff(previous.document, version.document) if previous is not None else None


def lane_errors() -> dict[str, LaneError]:
    """The last failed call of every lane that ever failed, by lane id."""
    return {error.lane_id: error for error in LaneError.objects.all()}
