"""Uploaded files are never kept past their limit.

Django's own upload handlers keep a whole file, in memory or in a temporary file, before any
form sees its size. ``LimitedUploadHandler`` comes first in ``FILE_UPLOAD_HANDLERS`` and passes
a file's bytes on to them only up to the limit of its form field (``UPLOAD_MAX_BYTES``, by field
name; the smallest of those for any other field, which no form of the site has). Past the limit
it passes nothing more on and only counts the rest as it goes by; the form then receives, in
place of the file, an empty ``UploadTooLarge`` of the real size, which the form's own size check
refuses with its message.
What the next handler holds by then (at most the limit) is dropped with the request.

The rest of the body is still read, and thrown away, so that the page can answer. The reverse
proxy's limit on the body is what turns a huge upload away at the door (docs/deployment.md).

Uploaded files are never served publicly: the views that let a person see one (the chat's
images, the Loom's photos) answer with ``uploaded_file_response`` once they have checked who
asks.
"""

import mimetypes
from io import BytesIO

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler
from django.http import FileResponse, Http404


def upload_max_bytes(field_name: str) -> int:
    limits = settings.UPLOAD_MAX_BYTES
    return limits.get(field_name, min(limits.values()))


def megabytes(size: int) -> str:
    """A size as people read it: bytes below a megabyte, megabytes above."""
    return f"{size / 2**20:.2f} MB" if size >= 2**20 else f"{size:,} bytes"


class UploadTooLarge(UploadedFile):
    """Stands in for a file that was not kept: no content, and the size it had."""

    def __init__(self, *, name: str, size: int, content_type: str, charset, content_type_extra):
        super().__init__(BytesIO(), name, content_type, size, charset, content_type_extra)


class LimitedUploadHandler(FileUploadHandler):
    def new_file(self, field_name, *args, **kwargs):
        super().new_file(field_name, *args, **kwargs)
        self.limit = upload_max_bytes(field_name)
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        # None keeps this chunk from the handlers after this one.
        return raw_data if self.received <= self.limit else None

    def file_complete(self, file_size):
        if self.received <= self.limit:
            return None  # the next handler's file stands
        return UploadTooLarge(
            name=self.file_name,
            size=self.received,
            content_type=self.content_type,
            charset=self.charset,
            content_type_extra=self.content_type_extra,
        )


def uploaded_file_response(field, *, missing: str) -> FileResponse:
    """The stored file of ``field`` (a ``FieldFile``), kept by the browser for a day, privately;
    a 404 saying ``missing`` when its file is gone."""
    try:
        handle = field.open("rb")
    except FileNotFoundError:
        raise Http404(missing) from None
    content_type = mimetypes.guess_type(field.name)[0] or "application/octet-stream"
    response = FileResponse(handle, content_type=content_type)
    response["Cache-Control"] = "private, max-age=86400"
    return response
