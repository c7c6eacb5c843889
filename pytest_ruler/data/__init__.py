"""Data files the tasks read: the QA datasets (SQuAD, HotpotQA) and their downloads.

Nothing here is fetched at run time: ``pytest-ruler download`` (``download``)
writes the files when online; ``qa`` loads and shape-checks them.
"""
