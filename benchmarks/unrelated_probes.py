"""Messages about things a LoCoMo conversation never talks about.

After a conversation is played, each of these is asked as the next message
(`benchmarks/locomo.py --probes`): recall should carry nothing for it, since
nothing in memory is related. Everyday requests a chat user makes: verse, unit
conversions, recipes, code, arithmetic, facts, writing help. Chosen by hand so
that no development conversation touches their topic (`locomo.py --probes`
prints the probes whose every content word a conversation holds, as a check).
"""

from __future__ import annotations

PROBES: tuple[str, ...] = (
    "Write a haiku about a lighthouse in fog.",
    "Convert 350 degrees Fahrenheit to Celsius.",
    "How many millilitres are in three US cups?",
    "Give me a recipe for hollandaise sauce.",
    "Write a Python function that reverses a linked list.",
    "What is 17 times 23?",
    "Explain what a SQL left join does.",
    "What is the capital of Mongolia?",
    "How do I undo the last git commit but keep the changes?",
    "Translate 'where is the train station' into German.",
    "Write a limerick about a forgetful octopus.",
    "What is the boiling point of water at the top of Everest?",
    "How do I convert a string to an integer in Rust?",
    "Give me a regular expression that matches an IPv4 address.",
    "How long should I boil a soft-boiled egg?",
    "What does HTTP status code 418 mean?",
    "Summarise the plot of Hamlet in two sentences.",
    "How many kilometres is a marathon?",
    "What is the derivative of x cubed times sine x?",
    "Write a bash one-liner that counts the lines of every .py file in a folder.",
    "What's the difference between a list and a tuple in Python?",
    "How do I make a sourdough starter from scratch?",
    "Convert 5 feet 9 inches to centimetres.",
    "What year did the Berlin Wall fall?",
    "Explain the Pythagorean theorem with an example.",
    "Write a short sonnet about a broken umbrella.",
    "How do I centre a div horizontally and vertically with CSS?",
    "What is the chemical symbol for tungsten?",
    "How many grams of sugar are in a tablespoon?",
    "What is the time complexity of binary search?",
    "Give me a recipe for a vegetarian lentil curry.",
    "How do I change a flat tyre on a bicycle?",
    "What is the square root of 2 to five decimal places?",
    "Write a JavaScript function that debounces another function.",
    "What causes the seasons on Earth?",
    "Explain the difference between TCP and UDP.",
    "How many ounces are in a kilogram?",
    "Write a polite email declining a meeting invitation from a vendor.",
    "What is the plural of 'cactus'?",
    "How do I remove duplicates from a list in Python while keeping order?",
    "Who wrote 'One Hundred Years of Solitude'?",
    "How many seconds are in a leap year?",
    "What is a prime number? List the primes below 30.",
    "How do I descale an electric kettle?",
    "Explain what a Docker volume is.",
    "What is the speed of sound in air at 20 degrees Celsius?",
    "Write a SQL query that finds the second highest salary in a table.",
    "Give me three synonyms for 'ubiquitous'.",
    "How do I compute compound interest on a savings account?",
    "What is the longest river in South America?",
)
