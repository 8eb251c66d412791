"""A fake judge for every method on one document: DCE/RAI (the toy judge), Summ-NLI, Sent-NLI, QG and QA.

A text containing `bad` is inconsistent. QG asks one question per window whose expected answer is `bad`
when the window holds it, else the window's last word; QA judges a pair inconsistent when that answer
contains `bad`. `skip_judgement` makes the Sent-NLI reply for windows containing that word leave out
its judgement (a parse failure).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.fakes import answers_connection_check, toy_judge


def nli_judge(bad: str = "1999", fix: str = "1889", skip_judgement: str | None = None) -> Callable[[dict], object]:
    dcr_judge = toy_judge(bad=bad, fix=fix)

    def respond(body: dict) -> object:
        prompt = body["messages"][0]["content"]  # a retry ("could not be read") carries the prompt first
        m = re.search(
            r"### (?:One of the specified sentence in summary|Generated Summary):\n(.*)\n\n### Reasoning", prompt, re.S
        )
        if m:
            text = m.group(1)
            scale = re.search(r"give a consistency score from (\S+) to (\S+) as", prompt)
            if scale:  # Summ-NLI's score mode: the bottom of the range when wrong, else the top
                return {"reasoning": f"The text says {text!r}.", "score": float(scale.group(1 if bad in text else 2))}
            if skip_judgement and skip_judgement in text:
                return {"reasoning": f"Thinking about {text}"}
            label = "Inconsistent" if bad in text else "Consistent"
            return {"reasoning": f"The text says {text!r}.", "judgement": label}
        if prompt.startswith("### Instruction:\n\nSuppose you are"):
            sent = re.search(r'"Specified sentences" : (.*)\n', prompt).group(1)
            answer = bad if bad in sent else sent.rstrip(".").split()[-1]
            return {"entities": [answer], "pairs": [{"question": f"What is said in: {sent}", "answer": answer}]}
        if prompt.startswith("Now you are one of the greatest English linguist experts"):
            pair = re.search(r"### Question-answer pairs:\n\n(.*)\n\nPlease refer", prompt, re.S).group(1)
            answer = pair.split("A1: ")[1]
            label = "Inconsistent" if bad in answer else "Consistent"
            result = {"question": "q", "answer": answer, "reasoning": f"checked {answer}", "judgement": label}
            return {"results": [result]}
        return dcr_judge(body)

    return answers_connection_check(respond)
