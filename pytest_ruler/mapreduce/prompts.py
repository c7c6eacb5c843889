"""The map-reduce prompt texts: map layouts, collapse and reduce (no code, only templates).

The map prompt carries the structured information protocol (four fields: Extracted
Information, Rationale, Answer, Confidence Score) and, with calibration on, the
confidence principles with an example per level (in-context confidence calibration),
as in the LLM×MapReduce paper. ``MAP_LAYOUTS`` are the measured orderings of the same
parts (``MapReduceConfig.layout``; ``LAYOUT_NOTES`` says each in a few words, for the
grounding label). The pipeline fills them; tasks supply the instruction, question and the
strategy's guide and examples.

``few-shot`` shows one filled record for a made-up part before the real one, so a base model
(and a small instruct model) can continue the pattern: the made-up part, its question and its
record are fixed text written here (``FEW_SHOT_EXAMPLES``, per strategy; the record is the
strategy's own ``example``), filled only with the strategy's fixed example values and the
needle kind the question names. Nothing of a sample reaches them.

Public names: ``RECORD_PREFIX``, ``CALIBRATION``, ``MAP_PROMPT``, ``FORMAT``,
``MAP_LAYOUTS``, ``LAYOUT_NOTES``, ``FEW_SHOT_EXAMPLES``, ``COLLAPSE_PROMPT``, ``REDUCE_PROMPT``.
"""

__all__ = ["CALIBRATION", "COLLAPSE_PROMPT", "FEW_SHOT_EXAMPLES", "FORMAT", "LAYOUT_NOTES", "MAP_LAYOUTS", "MAP_PROMPT",
           "RECORD_PREFIX", "REDUCE_PROMPT"]

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
    # one filled record for a made-up part, then the real part in the same shape: a base
    # model continues the pattern (the prompt's "Extracted Information:" starts a new line)
    "few-shot": """{instruction}
The text is read in parts, each part separately. For each part, write a record with four fields: Extracted Information, Rationale, Answer, Confidence Score. {guide} {calibration}
A made-up example part, its question and its record:

{example_chunk}

{example_question}
{example_record}

Now the real text. You will read part {i} of {n} of the text (the other parts are read separately):

{chunk}

{question}
""",
}

# what each layout does, in the words of the grounding label
LAYOUT_NOTES = {
    "question-last": "the protocol before the chunk, the question last",
    "example-first": "the protocol and an example record before the chunk, the question last",
    "format-last": "the four lines to fill and an example record after the question",
    "few-shot": "one filled record for a made-up part before the chunk",
}

# few-shot: (made-up part, its question) per strategy; the record shown after them is the
# strategy's own ``example``. Placeholders: the strategy's fixed example values ({v1}, {v2})
# and the needle kind the question names ({kind}, {kind1}); nothing else.
FEW_SHOT_EXAMPLES = {
    "retrieve": (
        "The ferry left the harbour before dawn and the gulls followed it past the breakwater. One of the special "
        "magic {kind} for calm-river is: {v1}. By noon the fog had lifted and the coast was clear again.",
        "What is the special magic {kind1} for calm-river mentioned in the provided text?",
    ),
    "union": (
        "The market opened late because of the rain. One of the special magic {kind} for calm-river is: {v1}. "
        "Traders packed their stalls by six. One of the special magic {kind} for calm-river is: {v2}.",
        "What are all the special magic {kind} for calm-river mentioned in the provided text?",
    ),
    "chain": (
        "The grass is green. The sky is blue.\nVAR QWERT = 40213\nThe sun is yellow. Here we go.\n"
        "VAR ASDFG = VAR QWERT\nThere and back again.",
        "Question: Find all variables that are assigned the value 40213 in the text above.",
    ),
    "count": (
        "1. apple 2. river 3. stone 4. apple 5. cloud 6. river 7. apple 8. stone 9. maple 10. apple 11. river "
        "12. stone 13. apple 14. river 15. apple 16. stone 17. river 18. apple 19. candle",
        "Question: What are the most common words in the above list?",
    ),
    "facts": (
        "Gustave Eiffel's company designed and built the tower for the World's Fair. The Eiffel Tower was completed "
        "in 1889 and opened to the public that May.",
        "Question: When was the Eiffel Tower completed?",
    ),
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


