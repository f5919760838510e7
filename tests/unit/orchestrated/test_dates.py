"""Dates a document implies (dates.py): each made explicit on invented sentences, with whose it is."""

from __future__ import annotations

from gaiamesh.orchestrated.readings.dates import implied_dates, topic_person
from gaiamesh.pipeline.text import sentences


def _dates(text: str) -> list[tuple[str, int, str]]:
    return [(d.text, d.year, d.expression) for d in implied_dates(sentences(text))]


def test_a_pronoun_takes_the_subject_of_the_sentence_before() -> None:
    text = "The keeper was Hugh Bray, a boatman. He was made keeper in 1850 and died in 1890 at the age of 70."
    assert ("Hugh Bray was born in 1820.", 1820, "1890 - 70") in _dates(text)


def test_the_end_of_a_term_given_by_its_length() -> None:
    text = "Ellen Voss was elected to the board in 1921 and chaired it for 17 years."
    assert _dates(text) == [("Ellen Voss chaired it until 1938.", 1938, "1921 + 17")]
    text = "Colin Marr became the club's first coach in 1930. He coached the side for 12 years."
    assert _dates(text) == [("Colin Marr coached the side until 1942.", 1942, "1930 + 12")]


def test_no_date_is_implied_without_an_anchor_year() -> None:
    assert _dates("Tom Hale ran the forge for 30 years and was 60 when he sold it.") == []
    # a term whose end the sentence states is no implied date
    assert _dates("In 1900 Tom Hale took the forge and ran it for 30 years until 1931.") == []


def test_the_start_of_a_term_that_ended_when_a_dated_one_began() -> None:
    text = "The speaker, Ann Rudd, had sat on the council for nine years before entering Parliament in 1992."
    assert ("Ann Rudd had sat on the council from 1983.", 1983, "1992 - 9") in _dates(text)


def test_a_term_is_dated_from_the_sentence_before_only_if_it_tells_of_it() -> None:
    text = "Tom Reed joined the firm in 1874 as a clerk. He managed the mill for 19 years, until he retired."
    assert _dates(text) == []


def test_life_dates_in_brackets_and_an_age_said_with_then() -> None:
    text = "The hall was left to the town by the banker Ruth Askew (1790–1861)."
    assert ("Ruth Askew was born in 1790.", 1790, "1790") in _dates(text)
    assert ("Ruth Askew died in 1861.", 1861, "1861") in _dates(text)
    # whole dates, in either order of day and month, and a "c." before an uncertain year
    text = "Ruth Askew (14 March 1790 – 2 October 1861) was a banker."
    assert ("Ruth Askew died in 1861.", 1861, "1861") in _dates(text)
    text = "Ada Byrne (born Ada Ruth Pell; 3 May 1862 – 19 January 1931) was a composer."
    assert ("Ada Byrne died in 1931.", 1931, "1931") in _dates(text)
    text = "The mill passed to Amos Pell (c. 1702 – May 3, 1771)."
    assert ("Amos Pell was born in 1702.", 1702, "1702") in _dates(text)
    text = "In 1902 the board chose a new design. Its architect, Paul Grey, was then 41."
    assert ("Paul Grey was born in 1861.", 1861, "1902 - 41") in _dates(text)


def test_a_term_with_its_start_given_after_it() -> None:
    text = "Rose Venn later served as mayor for 6 years from 1931."
    assert _dates(text) == [("Rose Venn later served as mayor until 1937.", 1937, "1931 + 6")]


def test_subjects_past_adverbs_verb_led_clauses_and_then() -> None:
    text = "Its best batsman, the opener Hal Dyce, scored 90 centuries for Kent between 1921 and 1934, and later served as club captain for 6 years from 1936."
    assert ("Hal Dyce later served as club captain until 1942.", 1942, "1936 + 6") in _dates(text)
    text = "The library opened in 1905. It was designed by the architect Ruth Moss, then 38, for the town council."
    assert ("Ruth Moss was born in 1867.", 1867, "1905 - 38") in _dates(text)


def test_the_subject_of_a_clause_past_a_phrase_about_it() -> None:
    text = "The trust was set up in 1950. Its first hostel, in a farmhouse near Keld, opened the following year."
    assert ("Its first hostel opened in 1951.", 1951, "1950 + 1") in _dates(text)


def test_years_before_at_the_end_of_a_clause_count_back_from_its_year() -> None:
    text = "In 1910 a wing was built with a gift from the late alderman, Amos Kell, who had died three years before."
    assert ("Amos Kell had died in 1907.", 1907, "1910 - 3") in _dates(text)


def test_a_term_before_an_undated_event_dates_that_event() -> None:
    # the year may be in the sentence before; a relative clause is about the name it follows
    text = "The quarry closed in 1930. The pit lay flooded for 25 years before the council bought it."
    assert ("the council bought it in 1955.", 1955, "1930 + 25") in _dates(text)
    text = "The Crane family sold the works in 1905 to the Delph Brick Company, which ran it for 50 years before closing it."
    assert ("Delph Brick Company closing it in 1955.", 1955, "1905 + 50") in _dates(text)


def test_a_term_dated_from_an_earlier_sentence_that_names_the_same_person() -> None:
    text = "The chapel opened in 1851, with Ezra Holt as its first minister. The trustees paid for an organ. Holt served the chapel for 32 years."
    assert ("Holt served the chapel until 1883.", 1883, "1851 + 32") in _dates(text)


def test_a_trailing_age_is_the_subjects_not_a_place_named_before_it() -> None:
    text = "Ruth Calloway was drowned off Lundy in 1921, aged 40."
    assert _dates(text) == [("Ruth Calloway was born in 1881.", 1881, "1921 - 40")]
    # an agent after "by" keeps the age: "founded by X, then 52"
    assert ("Ann Pell was born in 1838.", 1838, "1890 - 52") in _dates("The hall was founded in 1890 by Ann Pell, then 52.")


def test_an_age_said_as_a_person_of_n() -> None:
    text = "Silas Orme had worked at the yard since he was a boy of 12 in 1840."
    assert ("Silas Orme was born in 1828.", 1828, "1840 - 12") in _dates(text)
    text = "Orme came to the town as a junior clerk of 19 in 1851."
    assert ("Orme was born in 1832.", 1832, "1851 - 19") in _dates(text)
    # a group or an amount "of N" is no age
    assert _dates("In 1840 the yard sailed with a crew of 30 men and was a fund of 600 pounds.") == []


def test_a_length_of_time_in_its_common_forms_ends_a_dated_start() -> None:
    # a clause with a subject of its own, dated from its sentence's year
    text = "From 1932, a dance school that ran for nine years used the upper floor."
    assert _dates(text) == [("a dance school that ran until 1941 used the upper floor.", 1941, "1932 + 9")]
    # after a semicolon, at the time the sentence told last; "took" keeps its verb
    text = "In 1902 the roof was found to be rotten, and it was stripped; the work took two years."
    assert _dates(text) == [("the work took until 1904.", 1904, "1902 + 2")]
    text = "Trams ran until 1931; buses continued for a further six years."
    assert _dates(text) == [("buses continued until 1937.", 1937, "1931 + 6")]
    # a sentence opening with a possessive tells of the time the sentence before dated
    text = "The cricket club was formed in 1871. Its first captain was Amos Reed, who led the club's eleven for five seasons."
    assert ("Amos Reed led the club's eleven until 1876.", 1876, "1871 + 5") in _dates(text)


def test_a_term_of_n_years_and_an_anniversary() -> None:
    text = "In 1990 the trust took a 25-year lease on the mill."
    assert _dates(text) == [("In 1990 the trust took a 25-year lease on the mill; the lease ends in 2015.", 2015, "1990 + 25")]
    text = "The choir was founded in 1880 and gave its first concert in 1881. In later years it moved to a new hall, opened in 1960. The choir celebrated its centenary with a concert."
    assert ("The choir celebrated its centenary with a concert in 1980.", 1980, "1880 + 100") in _dates_found(text)


def _dates_found(text: str) -> list[tuple[str, int, str]]:
    from gaiamesh.orchestrated.workers import year_finder

    sents = sentences(text)
    return [(d.text, d.year, d.expression) for d in implied_dates(sents, year_finder(sents))]


def test_an_age_then_n_before_and() -> None:
    text = "The bank was founded in 1820 by the draper Eli Voss, who was then 41 and had kept a shop in the town since 1801."
    assert ("Eli Voss was born in 1779.", 1779, "1820 - 41") in _dates(text)


def test_a_term_over_n_years_and_one_whose_end_is_stated() -> None:
    # a verb-led clause takes the noun phrase its sentence opens with
    text = "One engine, No. 4, was found in a scrapyard in 1960 and restored by a club over seven years."
    assert ("One engine restored by a club until 1967.", 1967, "1960 + 7") in _dates(text)
    # "for N years ..., who retired in Y": begun N years before Y
    text = "The library was run for 30 years by its founder, the curate Amos Bell, who retired in 1910."
    assert ("The library was run for 30 years by its founder, the curate Amos Bell from 1880.", 1880, "1910 - 30") in _dates(text)


def test_the_following_season_and_a_gerund_subject() -> None:
    text = "The company was formed in 1850, and quarrying began the following spring."
    assert ("quarrying began in 1851.", 1851, "1850 + 1") in _dates(text)


def test_an_age_told_alone_after_a_dated_death() -> None:
    # "He was 58." is the age at the event the sentence before dates, and whose it is
    text = "Walter Penrose, the mill's last owner, died on 3 May 1931 at his house in Truro. He was 58."
    assert _dates(text) == [("Walter Penrose was born in 1873.", 1873, "1931 - 58")]
    assert _dates("The mill was sold in 1931. It was 58.") == []  # a thing's sentence is no person's age


def test_the_person_a_biography_is_about() -> None:
    text = "Ada Byrne (1861–1930) was a geologist. She married Tom Ayre in 1888. He died in 1901."
    assert topic_person(sentences(text)) == ("Ada Byrne", "she")
    # no life dates after the opening name: not a biography's opening
    assert topic_person(sentences("The Dunlin Company ran ferries. Its master was Amos Pell. He retired.")) is None


def test_years_on_a_site_date_a_things_start() -> None:
    text = "The town hall was built in 1856; the sheep fair closed in 1990 after 300 years on the green."
    assert [(d[1], d[2]) for d in _dates(text)] == [(1690, "1990 - 300")]
