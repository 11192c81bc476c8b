"""How the oracle and the graders find things in a harness whose surface may have changed.

Harness-State Augmentation (HSA) renames tools, tool parameters (and may change their default
values or enum values) and skills, but keeps the *task* the same. The simulator's tasks, the
oracle and the graders therefore speak a **canonical** vocabulary and translate it to the
harness they are given through a `HarnessSurface`:

- **Tools by binding.** A tool is found by its `binding` (`sim.check_stock`), never by name.
- **Skills by role.** A role is the skill's name in the demo harness (`product-qa`,
  `coupon-push`, ...; see `ROLES`). A role resolves to a skill of the harness, in this order:
  1. the `skill_roles` mapping passed in (role -> current skill name), e.g. from an HSA
     mapping of the original harness;
  2. a skill whose front matter has `metadata: {role: <role>}` (HSA transforms that rename
     skills should stamp it: metadata is never shown to the model, so it leaks nothing);
  3. a skill named like the role (the original demo harness).
- **Parameters by canonical name.** Canonical names are the demo tools' (`link_no`,
  `link_nos`, `size`, `color`, `region`, `topic`, `query`, `category`, `max_price`, `limit`),
  which are also the names the simulator's handlers (the bindings) take. A tool's current
  parameter names come, per binding, from
  1. the `param_names` mapping passed in (binding -> {canonical parameter -> current
     parameter}), when it has an entry for the binding;
  2. otherwise the tool's own `binding_args` (model-facing name -> binding argument name):
     the binding's argument name *is* the canonical name. HSA transforms that rename
     parameters update `binding_args`, so a variant harness describes itself.
  Unmapped parameters keep their names. `param_values` maps binding -> canonical parameter ->
  {canonical value -> current value} for transforms that rename enum values (e.g. topic
  "return" -> "returns"). `to_current` and `to_canonical` translate argument dicts in both
  directions.

So the oracle and the graders work on any variant harness given only the harness itself (tools
by binding, skills by `metadata.role`, parameters by `binding_args`); the three mappings are
for harnesses that do not describe themselves. They are plain dicts (JSON-able), so an HSA
transform can return them and the data pipeline can store them with each row.

The simulator's handlers read canonical argument names. The agent loop already translates
`binding_args` names before it calls a binding; renames known only from `param_names` (and
renamed enum values) are translated by `core.sim.room.room_bindings(room, surface)` (see
`HarnessSurface.received_to_canonical`), so nothing is translated twice and the world does not
change with the harness. Changed *defaults* need no mapping: the oracle passes every argument
that matters explicitly, and the loop fills a tool's schema defaults for omitted parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.harness.models import Harness, Skill, SkillKind, Tool

# ----------------------------------------------------------------------------- canonical names

B_PRODUCT = "sim.get_product_by_link"
B_SEARCH = "sim.search_products"
B_STOCK = "sim.check_stock"
B_COUPONS = "sim.list_coupons"
B_SHIPPING = "sim.get_shipping_info"
B_SIZE_CHART = "sim.get_size_chart"
B_AFTER_SALES = "sim.get_after_sales_policy"
B_ROOM = "sim.get_live_room_status"
B_COMPARE = "sim.compare_products"

SIM_BINDINGS = (
    B_PRODUCT,
    B_SEARCH,
    B_STOCK,
    B_COUPONS,
    B_SHIPPING,
    B_SIZE_CHART,
    B_AFTER_SALES,
    B_ROOM,
    B_COMPARE,
)

R_PRODUCT_QA = "product-qa"
R_CHIT_CHAT = "chit-chat"
R_AFTER_SALES = "after-sales"
R_PURCHASE = "purchase-guide"
R_SAFETY = "safety-refusal"
R_COUPON_PUSH = "coupon-push"
R_SIZE_ADVICE = "size-advice"
R_COMPARE = "product-compare"

REPLY_ROLES = (R_PRODUCT_QA, R_CHIT_CHAT, R_AFTER_SALES, R_PURCHASE, R_SAFETY)
STRATEGY_ROLES = (R_COUPON_PUSH, R_SIZE_ADVICE, R_COMPARE)
ROLES = REPLY_ROLES + STRATEGY_ROLES
ROLE_METADATA_KEY = "role"

ParamNames = Mapping[str, Mapping[str, str]]
ParamValues = Mapping[str, Mapping[str, Mapping[str, Any]]]


class SurfaceError(ValueError):
    """The harness lacks something the caller needs (a tool for a binding, a skill role)."""


@dataclass
class HarnessSurface:
    """The canonical <-> current translation for one harness. Cheap to build; build one per
    harness and reuse it (the data pipeline builds one per harness variant)."""

    harness: Harness
    skill_roles: Mapping[str, str] = field(default_factory=dict)
    param_names: ParamNames = field(default_factory=dict)
    """Explicit renames (binding -> canonical -> current); see `current_names` for the names
    in effect, which add those derived from the tools' `binding_args`."""
    param_values: ParamValues = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._binding_of: dict[str, str] = {}
        for tool in self.harness.active_tools:
            self._tools.setdefault(tool.binding, tool)
            self._binding_of[tool.name] = tool.binding
        names: dict[str, dict[str, str]] = {b: dict(m) for b, m in self.param_names.items()}
        for binding, tool in self._tools.items():
            if binding not in names:
                derived = {can: cur for cur, can in tool.binding_args.items() if can != cur}
                if derived:
                    names[binding] = derived
        self._names = names
        self._skill_of_role: dict[str, Skill] = {}
        self._role_of_skill: dict[str, str] = {}
        active = {s.name: s for s in self.harness.active_skills}
        for role in ROLES:
            skill = self._find_skill(role, active)
            if skill is not None:
                self._skill_of_role[role] = skill
                self._role_of_skill.setdefault(skill.name, role)
        self._inverse_names = {
            b: {cur: can for can, cur in m.items()} for b, m in self._names.items()
        }
        self._inverse_values: dict[str, dict[str, dict[str, Any]]] = {
            b: {p: {_key(cur): can for can, cur in vals.items()} for p, vals in m.items()}
            for b, m in self.param_values.items()
        }

    @classmethod
    def from_original(
        cls,
        harness: Harness,
        original: Harness | HarnessSurface,
        *,
        skill_name: Callable[[str], str],
        param_name: Callable[[str, str], str],
    ) -> HarnessSurface:
        """The surface of `harness`, a variant of `original`, from rename functions keyed by
        the original's names: `skill_name(old skill) -> new skill`, `param_name(old tool,
        old param) -> new param` (an HSA `MappingChain`'s `.skill` and `.param` fit as they
        are). Pass `original` as a HarnessSurface when it is itself a renamed harness."""
        base = original if isinstance(original, HarnessSurface) else cls(original)
        roles = {}
        for role in ROLES:
            old = base.skill_name(role)
            if old is not None:
                roles[role] = skill_name(old)
        names: dict[str, dict[str, str]] = {}
        for binding, tool in base._tools.items():
            props = tool.parameters.get("properties", {})
            inverse = base._inverse_names.get(binding, {})
            renamed = {inverse.get(p, p): param_name(tool.name, p) for p in props}
            renamed = {c: n for c, n in renamed.items() if c != n}
            if renamed:
                names[binding] = renamed
        values = {b: {p: dict(v) for p, v in m.items()} for b, m in base.param_values.items()}
        return cls(harness, roles, names, values)

    def _find_skill(self, role: str, active: dict[str, Skill]) -> Skill | None:
        mapped = self.skill_roles.get(role)
        if mapped is not None:
            return active.get(mapped)
        for skill in active.values():
            if skill.metadata.get(ROLE_METADATA_KEY) == role:
                return skill
        return active.get(role)

    # ------------------------------------------------------------------ tools

    def tool(self, binding: str) -> Tool | None:
        """The first enabled tool bound to `binding`, or None."""
        return self._tools.get(binding)

    def tool_name(self, binding: str) -> str | None:
        tool = self._tools.get(binding)
        return tool.name if tool is not None else None

    def binding_of(self, tool_name: str) -> str | None:
        """The binding of an enabled tool called `tool_name` (None: unknown tool)."""
        return self._binding_of.get(tool_name)

    @property
    def load_skill_tool(self) -> str:
        return self.harness.settings.load_skill_tool

    @property
    def current_names(self) -> dict[str, dict[str, str]]:
        """The parameter renames in effect: binding -> {canonical -> current}, from
        `param_names` where it names the binding, else from the tool's `binding_args`."""
        return {b: dict(m) for b, m in self._names.items()}

    def param(self, binding: str, canonical: str) -> str:
        return self._names.get(binding, {}).get(canonical, canonical)

    def to_current(self, binding: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Canonical arguments -> the names (and enum values) of this harness's tool."""
        values = self.param_values.get(binding, {})
        out: dict[str, Any] = {}
        for name, value in arguments.items():
            mapped = values.get(name, {})
            out[self.param(binding, name)] = mapped.get(_key(value), value)
        return out

    def to_canonical(self, binding: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """This harness's argument dict -> canonical names and values (unknown keys kept)."""
        inverse = self._inverse_names.get(binding, {})
        out: dict[str, Any] = {}
        for name, value in arguments.items():
            canonical = inverse.get(name, name)
            mapped = self._inverse_values.get(binding, {}).get(canonical, {})
            out[canonical] = mapped.get(_key(value), value) if _hashable(value) else value
        return out

    def received_to_canonical(
        self, binding: str, arguments: Mapping[str, Any], tool_name: str | None = None
    ) -> dict[str, Any]:
        """What a binding received (the agent loop has already translated the names in the
        called tool's `binding_args`) -> canonical names and values. Only names the loop did
        not translate go through this surface's renames, so none is translated twice;
        renamed enum values are translated back for every parameter."""
        tool = self.harness.tool(tool_name) if tool_name is not None else None
        if tool is None or tool.binding != binding:
            tool = self._tools.get(binding)
        done = set(tool.binding_args.values()) if tool is not None else set()
        inverse = self._inverse_names.get(binding, {})
        values = self._inverse_values.get(binding, {})
        out: dict[str, Any] = {}
        for name, value in arguments.items():
            canonical = name if name in done else inverse.get(name, name)
            mapped = values.get(canonical, {})
            out[canonical] = mapped.get(_key(value), value) if _hashable(value) else value
        return out

    @property
    def translates_received(self) -> bool:
        """Whether a binding may receive names or values it does not take (explicit renames
        or renamed enum values), i.e. whether `room_bindings` must translate."""
        return bool(self.param_names or self.param_values)

    # ------------------------------------------------------------------ skills

    def skill(self, role: str) -> Skill | None:
        return self._skill_of_role.get(role)

    def skill_name(self, role: str) -> str | None:
        skill = self._skill_of_role.get(role)
        return skill.name if skill is not None else None

    def role_of(self, skill_name: str) -> str | None:
        """The canonical role of an enabled skill, or None (unknown or role-less skill)."""
        return self._role_of_skill.get(skill_name)

    def is_reply_skill(self, skill_name: str) -> bool:
        skill = self.harness.skill(skill_name)
        return skill is not None and skill.kind is SkillKind.REPLY


def _key(value: Any) -> Any:
    """Dict key for a value in a value mapping (mappings from JSON have string keys)."""
    return str(value) if _hashable(value) else repr(value)


def _hashable(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None
