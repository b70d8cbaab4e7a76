"""A taskflow service in Python: counts the words of a text (docs/python.md)."""

from collections import Counter

from taskflow_sdk import Fail, Service

svc = Service("wordcount-service", concurrency=8)  # REDIS_URL, TASKFLOW_NAMESPACE from the environment


@svc.task("text.wordcount", description="Counts the words of a text.", notify="Your word count is ready")
async def wordcount(task):
    text = (task.params or {}).get("text")
    if not isinstance(text, str):
        raise Fail("INVALID_PARAMS", "text: required, a string")
    words = text.lower().split()
    await task.progress(50, f"{len(words)} words read")
    top = Counter(words).most_common(5)
    url = await task.put_file(f"{task.id}.txt", "text/plain", "\n".join(f"{w} {n}" for w, n in top))
    return {"file_url": url, "summary": f"{len(words)} words", "metadata": {"words": len(words), "top": top}}


if __name__ == "__main__":
    svc.run()  # until SIGINT or SIGTERM, then a graceful stop
