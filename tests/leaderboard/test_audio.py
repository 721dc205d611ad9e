"""Audio delivery: byte ranges checked byte for byte against the stored file, signed links that
expire and cannot be altered, waveform peaks against numpy on the decoded WAV, and S3."""

from __future__ import annotations

import html
import io
import json
import os
import re
import time
import wave
import zipfile

import httpx
import numpy as np
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from scipy.io import wavfile

from evaluation import audio as evaluation_audio
from evaluation import stored as stored_objects
from evaluation.audio import wav_peaks
from leaderboard import audio

# The moto S3 server fixtures of the evaluation tests (pytest finds fixtures imported here).
from tests.evaluation.test_s3_storage import s3_storage  # noqa: F401

pytestmark = pytest.mark.django_db

SIZE = 10_000


@pytest.fixture
def stored():
    """A stored 'clip' of random bytes (the range logic does not care what the bytes are)."""
    data = os.urandom(SIZE)
    name = default_storage.save("clips/sample.wav", ContentFile(data))
    return name, data


def body(response) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def url_for(name: str, user=None) -> str:
    return audio.audio_url(key=name, user=user)


# --- Range semantics ----------------------------------------------------------------------------


def test_whole_file_without_range(client, stored):
    name, data = stored
    response = client.get(url_for(name))
    assert response.status_code == 200
    assert body(response) == data
    assert response["Content-Length"] == str(SIZE)
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Type"] == "audio/wav"
    assert "Content-Range" not in response
    assert response["Cache-Control"].startswith("private")


@pytest.mark.parametrize(
    "header, first, last",
    [
        ("bytes=0-99", 0, 99),  # the first bytes
        ("bytes=1234-5677", 1234, 5677),  # a middle range
        ("bytes=-500", SIZE - 500, SIZE - 1),  # the last 500 bytes
        ("bytes=1000-", 1000, SIZE - 1),  # open-ended
        ("bytes=9000-20000", 9000, SIZE - 1),  # past the end: clipped
        ("bytes=-20000", 0, SIZE - 1),  # a suffix longer than the file: all of it
        ("bytes=0-0", 0, 0),
        (f"bytes={SIZE - 1}-", SIZE - 1, SIZE - 1),
    ],
)
def test_partial_content(client, stored, header, first, last):
    name, data = stored
    response = client.get(url_for(name), HTTP_RANGE=header)
    assert response.status_code == 206
    assert body(response) == data[first : last + 1]
    assert response["Content-Range"] == f"bytes {first}-{last}/{SIZE}"
    assert response["Content-Length"] == str(last - first + 1)
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Type"] == "audio/wav"


@pytest.mark.parametrize("header", [f"bytes={SIZE}-", f"bytes={SIZE + 5}-{SIZE + 10}", "bytes=-0"])
def test_unsatisfiable_range(client, stored, header):
    name, _ = stored
    response = client.get(url_for(name), HTTP_RANGE=header)
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{SIZE}"
    assert body(response) == b""


# Not a range, several ranges, garbage, or last < first (RFC 9110: ignore the header).
@pytest.mark.parametrize(
    "header", ["items=0-5", "bytes=0-5,10-20", "bytes=abc", "bytes=-", f"bytes={SIZE}-0"]
)
def test_ranges_we_do_not_serve_get_the_whole_file(client, stored, header):
    name, data = stored
    response = client.get(url_for(name), HTTP_RANGE=header)
    assert response.status_code == 200
    assert body(response) == data


def test_if_range_we_cannot_validate_sends_everything(client, stored):
    name, data = stored
    response = client.get(url_for(name), HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"abc"')
    assert response.status_code == 200 and body(response) == data


def test_head(client, stored):
    name, _ = stored
    response = client.head(url_for(name))
    assert response.status_code == 200
    assert response["Content-Length"] == str(SIZE)
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Type"] == "audio/wav"
    assert response.content == b""
    partial = client.head(url_for(name), HTTP_RANGE="bytes=100-199")
    assert partial.status_code == 206
    assert partial["Content-Range"] == f"bytes 100-199/{SIZE}"
    assert partial["Content-Length"] == "100"
    assert partial.content == b""


def test_other_methods_are_refused(client, stored):
    name, _ = stored
    assert client.post(url_for(name)).status_code == 405


def test_large_files_stream_in_blocks(client):
    data = os.urandom(1_000_003)
    name = default_storage.save("clips/long.wav", ContentFile(data))
    response = client.get(url_for(name), HTTP_RANGE="bytes=10-900009")
    blocks = list(response.streaming_content)
    assert len(blocks) > 10 and max(len(b) for b in blocks) <= audio.BLOCK_BYTES
    assert b"".join(blocks) == data[10:900010]


def test_missing_file_is_404(client):
    assert client.get(url_for("clips/nothing.wav")).status_code == 404
    assert client.get(audio.peaks_url(key="clips/nothing.wav", user=None)).status_code == 404


# --- Signatures --------------------------------------------------------------------------------


def test_links_expire(client, stored, settings):
    name, data = stored
    settings.SIGNED_URL_SECONDS = 1
    link = url_for(name)
    peaks = audio.peaks_url(key=name, user=None)
    assert client.get(link, HTTP_RANGE="bytes=0-9").status_code == 206
    time.sleep(2.1)
    response = client.get(link, HTTP_RANGE="bytes=0-9")
    assert response.status_code == 403 and b"expired" in response.content
    assert client.get(peaks).status_code == 403
    settings.SIGNED_URL_SECONDS = 300
    assert body(client.get(link)) == data  # the same link, under a longer limit


def test_tampered_or_missing_signatures_are_refused(client, stored, django_user_model):
    name, _ = stored
    token = audio.audio_token(key=name, user=None)
    payload, timestamp, signature = token.rsplit(":", 2)
    flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    other = audio.audio_token(key="clips/other.wav", user=None)
    forged = f"{other.rsplit(':', 2)[0]}:{timestamp}:{signature}"  # another key, this signature
    for bad in (f"{payload}:{timestamp}:{flipped}", forged, "nonsense", payload):
        assert client.get(f"/audio/{bad}/").status_code == 403, bad
        assert client.get(f"/audio/{bad}/peaks/").status_code == 403, bad
    assert client.get("/audio/").status_code == 404
    # A token signed for another purpose (another salt) is not an audio token.
    from django.core import signing

    foreign = signing.dumps({"k": name, "u": None, "s": None})
    assert client.get(f"/audio/{foreign}/").status_code == 403
    # Bound to its viewer: a signed-in user's link does not work for someone else.
    user = django_user_model.objects.create_user("listener")
    mine = url_for(name, user=user)
    assert client.get(mine).status_code == 403
    client.force_login(user)
    assert client.get(mine, HTTP_RANGE="bytes=0-0").status_code == 206


# --- Waveform peaks -----------------------------------------------------------------------------


def write_wav(frames: np.ndarray, width: int, rate: int = 8000) -> bytes:
    """Integer samples (frames x channels) as a PCM WAV, written by the standard library."""
    channels = frames.shape[1]
    if width == 1:
        raw = (frames + 128).astype(np.uint8).tobytes()
    elif width == 2:
        raw = frames.astype("<i2").tobytes()
    elif width == 3:
        values = frames.astype("<i4").reshape(-1)
        raw = (
            np.stack([(values >> shift) & 0xFF for shift in (0, 8, 16)], axis=1)
            .astype(np.uint8)
            .tobytes()
        )
    else:
        raw = frames.astype("<i4").tobytes()
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(raw)
    return buffer.getvalue()


def expected_peaks(data: bytes, buckets: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Decode with scipy and take min/max per bucket, bucket b holding frames
    ceil(b*N/n) .. ceil((b+1)*N/n) - 1."""
    rate, samples = wavfile.read(io.BytesIO(data))
    if samples.dtype == np.uint8:
        scaled = (samples.astype(np.float64) - 128) / 128
    elif samples.dtype == np.int16:
        scaled = samples / 32768.0
    else:  # 24-bit arrives left-aligned in int32, like 32-bit
        scaled = samples / 2.0**31
    scaled = scaled.reshape(len(scaled), -1)
    frames = len(scaled)
    n = min(buckets, frames)
    edges = [-((-b * frames) // n) for b in range(n + 1)]
    lows = np.array([scaled[edges[b] : edges[b + 1]].min() for b in range(n)])
    highs = np.array([scaled[edges[b] : edges[b + 1]].max() for b in range(n)])
    return lows, highs, frames / rate


@pytest.mark.parametrize(
    "width, channels, frames, buckets",
    [
        (2, 1, 100_003, 1000),
        (2, 2, 54_321, 700),
        (1, 1, 12_345, 100),
        (3, 1, 30_001, 300),
        (4, 2, 9_999, 250),
        (2, 1, 50, 1000),
    ],
)
def test_peaks_match_numpy(width, channels, frames, buckets, monkeypatch):
    rng = np.random.default_rng(width * 10 + channels)
    full = 2 ** (8 * width - 1)
    t = np.arange(frames)[:, None]
    signal = 0.6 * np.sin(t / 37.0 + np.arange(channels)) * np.exp(-t / frames)
    noise = rng.uniform(-0.3, 0.3, size=(frames, channels))
    ints = np.clip(np.round((signal + noise) * full), -full, full - 1).astype(np.int64)
    data = write_wav(ints, width)
    # Small blocks, so buckets straddle block boundaries.
    monkeypatch.setattr(evaluation_audio, "PEAK_BLOCK_BYTES", 777 * width * channels)
    peaks = wav_peaks(io.BytesIO(data), buckets=buckets)
    lows, highs, duration = expected_peaks(data, buckets)
    assert peaks["buckets"] == len(lows) == min(buckets, frames)
    assert peaks["duration"] == pytest.approx(duration)
    assert peaks["channels"] == channels
    np.testing.assert_allclose(peaks["min"], lows, atol=6e-5)
    np.testing.assert_allclose(peaks["max"], highs, atol=6e-5)


def test_peaks_endpoint_is_json_and_cached(client, monkeypatch):
    frames = np.round(np.sin(np.arange(16_000) / 10) * 20_000).astype(np.int64)[:, None]
    data = write_wav(frames, 2, rate=16_000)
    name = default_storage.save("clips/tone.wav", ContentFile(data))
    opened = []
    real = stored_objects.open_stored_stream
    monkeypatch.setattr(stored_objects, "open_stored_stream", lambda n: opened.append(n) or real(n))
    link = audio.peaks_url(key=name, user=None)
    first = client.get(link, {"buckets": 450})
    assert first.status_code == 200 and first["Content-Type"] == "application/json"
    peaks = first.json()
    assert peaks["buckets"] == 500  # rounded up to hundreds
    assert peaks["duration"] == pytest.approx(1.0)
    lows, highs, _ = expected_peaks(data, 500)
    np.testing.assert_allclose(peaks["max"], highs, atol=6e-5)
    assert client.get(link, {"buckets": 480}).json() == peaks
    assert opened == [name]  # the second answer came from the cache


def test_peaks_of_something_that_is_not_a_wav(client):
    name = default_storage.save("clips/fake.wav", ContentFile(b"ID3 this is an mp3, honest"))
    response = client.get(audio.peaks_url(key=name, user=None))
    assert response.status_code == 422
    assert "not a PCM WAV file" in response.json()["error"]


# --- S3 ------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_s3_redirects_to_a_presigned_url_that_serves_ranges(client, s3_storage, settings):  # noqa: F811
    settings.SIGNED_URL_SECONDS = 120
    frames = np.round(np.sin(np.arange(48_000) / 7) * 9_000).astype(np.int64)[:, None]
    data = write_wav(frames, 2, rate=16_000)
    name = default_storage.save("submissions/1/task/response.wav", ContentFile(data))
    response = client.get(url_for(name))
    assert response.status_code == 302
    location = response["Location"]
    assert "X-Amz-Expires=120" in location or "Expires=" in location
    partial = httpx.get(location, headers={"Range": "bytes=100-1099"})
    assert partial.status_code == 206
    assert partial.content == data[100:1100]
    assert partial.headers["content-type"] == "audio/wav"
    # Peaks stream the object from S3 too.
    peaks = client.get(audio.peaks_url(key=name, user=None), {"buckets": 100}).json()
    lows, highs, duration = expected_peaks(data, 100)
    assert peaks["duration"] == pytest.approx(duration)
    np.testing.assert_allclose(peaks["min"], lows, atol=6e-5)


@pytest.mark.django_db(transaction=True)
def test_s3_bundle_members_are_read_by_range(s3_storage, monkeypatch):  # noqa: F811
    payload = {"text": "hello", "chunks": [{"text": "hello", "timestamp": [0.5, 0.9]}]}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("padding.bin", os.urandom(3_000_000))
        archive.writestr("run/task/response.json", json.dumps(payload))
    name = default_storage.save("bundles/b.zip", ContentFile(buffer.getvalue()))
    reads = []
    real = stored_objects._RangedObject.readinto

    def counting(self, target):
        count = real(self, target)
        reads.append(count)
        return count

    monkeypatch.setattr(stored_objects._RangedObject, "readinto", counting)
    with stored_objects.open_stored_seekable(name) as handle, zipfile.ZipFile(handle) as archive:
        assert json.loads(archive.read("run/task/response.json")) == payload
    assert sum(reads) < 1_000_000  # the 3 MB of padding was never downloaded


@pytest.mark.django_db(transaction=True)
def test_s3_task_page_end_to_end(client, s3_storage, tmp_path):  # noqa: F811
    from evaluation.benchmarks.mpbench import demo
    from evaluation.services import benchmark_import, submission_create

    demo.write_demo_benchmark(tmp_path / "source")
    board = benchmark_import(
        slug="demo", directory=tmp_path / "source", plugin="mp-bench", is_demo=True
    ).benchmark
    demo.write_demo_bundle_zip(tmp_path / "b.zip", profile="strong", seed=5)
    run = submission_create(
        benchmark=board,
        bundle_path=tmp_path / "b.zip",
        system_name="On S3",
        judge=board.judges.get(slug="offline"),
        publish=True,
    )
    task = demo.DEMO_TASKS[0]
    demo.write_demo_bundle(tmp_path / "folder", profile="strong", seed=5, audio=False)
    response_words = json.loads(
        (tmp_path / "folder" / task.task_dir / "response.json").read_text()
    )["chunks"]
    page = client.get(f"/submissions/{run.pk}/tasks/{task.task_dir}/").content.decode()
    for chunk in response_words:
        assert f'data-seek="{chunk["timestamp"][0]}"' in page
    src = re.search(r'data-name="response.wav".*?src="([^"]+)"', page, re.S).group(1)
    redirect = client.get(html.unescape(src))
    assert redirect.status_code == 302
    wav = httpx.get(redirect["Location"], headers={"Range": "bytes=0-43"})
    assert wav.status_code == 206 and wav.content[:4] == b"RIFF" and wav.content[8:12] == b"WAVE"
