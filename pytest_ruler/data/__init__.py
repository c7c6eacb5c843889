"""Data files the tasks read: the QA datasets (SQuAD, HotpotQA), the essays, and their downloads.

Nothing here is fetched at run time: ``pytest-ruler download`` (``download``)
writes the files when online; ``qa`` loads and shape-checks them.

Modules: ``download`` (``download()`` and the public names of the download),
``sources`` (kinds, file names, URLs, mirrors, digests, essay names),
``fetch`` (HTTP fetching, streaming, atomic writes, ``RulerDownloadError``),
``essays`` (the essay pages turned into RULER's ``PaulGrahamEssays.json``),
``qa`` (loading SQuAD and HotpotQA); for RULERv2's tasks ``mmlu`` (MMLU's test and
auxiliary train questions), ``ruler2_qa`` (HotpotQA train paragraphs, dev questions with
their supporting paragraphs) and ``download_ruler2`` (their downloads).
"""
