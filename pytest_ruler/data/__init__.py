"""Data the tasks read: every kind in one registry (``registry``), its readers, and the downloads.

Nothing here is fetched at run time: ``pytest-ruler download`` (``download``)
writes the files when online; the registry reads and shape-checks them.

Modules: ``registry`` (each kind of data: its option, its download, its reader; one cached
reader ``read_data`` and one error, ``DataProblem`` inside and ``RulerDataError`` outside, for
all of them; a family names the kinds it needs with ``Family.data_needs``),
``download`` (``download()`` and the public names of the download),
``sources`` (kinds, file names, URLs, mirrors, digests, essay names),
``fetch`` (HTTP fetching, streaming, atomic writes, ``RulerDownloadError``),
``essays`` (the essay pages turned into RULER's ``PaulGrahamEssays.json``),
``essay_corpus`` (reading essays into sentences; the offline default corpus),
``qa`` (reading SQuAD and HotpotQA); for RULERv2's tasks ``mmlu`` (MMLU's test and
auxiliary train questions), ``ruler2_qa`` (HotpotQA train paragraphs, dev questions with
their supporting paragraphs) and ``download_ruler2`` (their downloads).
"""
