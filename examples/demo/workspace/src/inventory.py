"""Stock of the book exchange."""

from dataclasses import dataclass, field


@dataclass
class Book:
    title: str
    author: str
    copies: int = 1


@dataclass
class Inventory:
    books: dict[str, Book] = field(default_factory=dict)

    def add(self, book: Book) -> None:
        # TODO: merge copies when the same title arrives with a different author spelling
        existing = self.books.get(book.title)
        if existing:
            existing.copies += book.copies
        else:
            self.books[book.title] = book

    def take(self, title: str) -> Book:
        # TODO: raise a clear error instead of KeyError when the title is unknown
        book = self.books[title]
        book.copies -= 1
        if book.copies == 0:
            del self.books[title]
        return book
