"""The map-reduce prompt texts: map layouts, collapse and reduce (no code, only templates).

The map prompt carries the structured information protocol (four fields: Extracted
Information, Rationale, Answer, Confidence Score) and, with calibration on, the
confidence principles with an example per level (in-context confidence calibration),
as in the LLM×MapReduce paper. ``MAP_LAYOUTS`` are the measured orderings of the same
parts (``MapReduceConfig.layout``). The pipeline fills them; tasks supply the
instruction, question and the strategy's guide and examples.

Public names: ``RECORD_PREFIX``, ``CALIBRATION``, ``MAP_PROMPT``, ``FORMAT``,
``MAP_LAYOUTS``, ``COLLAPSE_PROMPT``, ``REDUCE_PROMPT``.
"""

__all__ = ["CALIBRATION", "COLLAPSE_PROMPT", "FORMAT", "MAP_LAYOUTS", "MAP_PROMPT", "RECORD_PREFIX", "REDUCE_PROMPT"]

RECORD_PREFIX = "Extracted Information:"

# in-context confidence calibration: the scoring principles, one example per level
CALIBRATION = (
    "Confidence Score (0-5): 5 if this part states the answer word for word (example: {example_5}), 3 if the "
    "answer is only inferred (example: {example_3}), 0 if this part says nothing about the question (then Answer: "
    "NO INFORMATION)."
)

# the question comes last, right after the chunk, as in RULER's own templates: a small
# model answers the question it read last (measured on SmolLM2-135M: with the protocol
# text after the question it copied that text instead of the needle)
MAP_PROMPT = """{instruction}
You will read part {i} of {n} of the text (the other parts are read separately), then reply with four fields about this part only: Extracted Information, Rationale, Answer, Confidence Score. {guide} {calibration}

{chunk}

{question}"""

# the four fields spelled out, one per line, with the strategy's own example record
FORMAT = """Reply about this part only, with these four lines:
Extracted Information: {guide_short}
Rationale: why this part does or does not answer the question
Answer: the answer, or NO INFORMATION
Confidence Score: 0 to 5
Example reply:
{example}"""

# map prompt layouts (``MapReduceConfig.layout``); measured on SmolLM2-135M-Instruct
# with bench/mapreduce.py --layouts (bench/results/mapreduce_layouts.json)
MAP_LAYOUTS = {
    # the protocol before the chunk, the question last
    "question-last": MAP_PROMPT,
    # the protocol and a filled example record before the chunk, the question last
    "example-first": """{instruction}
You will read part {i} of {n} of the text (the other parts are read separately). {guide} {calibration}
{format}

{chunk}

{question}""",
    # the question, then the four lines to fill and an example record, last
    "format-last": """{instruction}
You will read part {i} of {n} of the text (the other parts are read separately).

{chunk}

{question}
{calibration}
{format}""",
}

COLLAPSE_PROMPT = """{instruction}
The text was read in parts. These records say what parts {first} to {last} contain about the question:

{records}

{question}
Merge these records into one record with the same four fields: Extracted Information (every fact needed for the question), Rationale, Answer (where records disagree, keep the answer with the higher Confidence Score), Confidence Score."""

REDUCE_PROMPT = """{instruction}
The text was read in {n} parts. These records say what the parts contain about the question (Confidence Score: 5 = stated in the text, 0 = not supported; where records disagree, trust the higher score):

{records}

{question}"""


