"""Two memory kinds besides the tutorial's, one of each shape, for the tests (MAISTRO_MEMORY_KINDS names `KINDS`)."""

from typing import Optional

from pydantic import BaseModel, Field

from graph import DEFAULT_MEMORY_KINDS, MemoryKind


class Contact(BaseModel):
    """A person the user knows."""

    name: str = Field(description="The person's name.")
    phone: Optional[str] = Field(None, description="Their phone number.")
    relation: Optional[str] = Field(None, description="How the user knows them.")


class Health(BaseModel):
    """The user's health notes."""

    allergies: list[str] = Field(default_factory=list, description="What the user is allergic to.")
    conditions: list[str] = Field(default_factory=list, description="Conditions the user mentioned.")


CONTACT = MemoryKind(name="contact", schema=Contact, collection=True, description="People the user knows")
HEALTH = MemoryKind(name="health", schema=Health, collection=False, description="the user's allergies and conditions")
KINDS = [*DEFAULT_MEMORY_KINDS, CONTACT, HEALTH]
# Not a list of memory kinds: MAISTRO_MEMORY_KINDS naming it is refused.
NOT_KINDS = {"contact": CONTACT}
# The tutorial's kinds without the instructions, and the contacts.
WITHOUT_INSTRUCTIONS = [kind for kind in KINDS if kind.name not in ("instructions", "health")]
