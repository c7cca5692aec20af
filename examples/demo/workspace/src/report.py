"""Weekly report of the book exchange."""

from inventory import Inventory


def weekly_report(inventory: Inventory) -> str:
    lines = [f"{b.title} by {b.author}: {b.copies}" for b in inventory.books.values()]
    # TODO: sort by author, then title
    return "\n".join(lines)
