"""Implied arithmetic (derive.py): each reading on invented sentences, and where none applies."""

from __future__ import annotations

from gaiamesh.orchestrated.readings.derive import implied, question_parts, remainder
from gaiamesh.orchestrated.readings.wording import counts
from gaiamesh.pipeline.text import sentences

from .test_dates import _dates


def _read(question: str, text: str, year: int | None = None) -> str | None:
    reading = implied(question, sentences(text), lambda _query, _skip: year)
    return None if reading is None else reading.expression


def test_counts_skip_years_and_read_words_and_thousands() -> None:
    found = counts("In 1902 the club had 1,250 members, twelve of them founders.")
    assert [c.value for c in found] == [1250, 12]


def test_question_parts_split_at_the_last_verb() -> None:
    assert question_parts("How many of the sailors who joined in May deserted the ship?") == (
        "the sailors who joined in May", "deserted the ship"
    )  # fmt: skip


def test_a_part_the_question_does_not_ask_for_leaves_the_rest() -> None:
    text = "The Pendle Hotel burned in 1931. Of the 84 guests staying that night, 9 were injured."
    assert _read("How many of the guests staying that night escaped unhurt?", text) == "84 - 9"


def test_a_part_the_question_asks_for_is_not_a_complement() -> None:
    text = "The Pendle Hotel burned in 1931. Of the 84 guests staying that night, 9 were injured."
    assert _read("How many of the guests staying that night were injured?", text) is None


def test_negation_on_one_side_only_is_the_complement() -> None:
    text = "The ship carried 30 crew; twelve of them went ashore at Cadiz and five did not come back."
    assert _read("How many of the crew who went ashore at Cadiz came back?", text) == "12 - 5"


def test_other_than_and_of_which() -> None:
    text = "The library holds 5,400 books, of which the founder gave 1,900 in 1850."
    assert _read("How many books were given by people other than the founder?", text) == "5400 - 1900"
    text = "The organ cost 2,000 pounds, of which 1,500 pounds came from the parish and the rest from a bazaar."
    assert _read("How much money did the bazaar raise?", text) == "2000 - 1500"


def test_a_change_in_a_count() -> None:
    text = "The school opened with 40 pupils; a second classroom built in 1911 raised the roll to 65."
    assert _read("How many pupils did the second classroom add?", text) == "abs(65 - 40)"


def test_a_plain_count_is_no_change() -> None:
    text = "The school opened with 40 pupils; a second classroom built in 1911 raised the roll to 65."
    assert _read("How many pupils did the school open with?", text) is None


def test_a_year_given_relative_to_another() -> None:
    text = "The choir first sang in public in 1888, four years after the parish church was rebuilt."
    assert _read("In what year was the parish church rebuilt?", text) == "1888 - 4"
    text = "The canal was abandoned in 1921, six years before the railway to Lowick was opened."
    assert _read("When was the railway to Lowick opened?", text) == "1921 + 6"


def test_a_year_stated_outright_is_not_derived() -> None:
    text = (
        "The parish church was rebuilt in 1884. "
        "The choir first sang in public in 1888, four years after the parish church was rebuilt."
    )
    assert _read("In what year was the parish church rebuilt?", text) is None


def test_a_birth_year_from_an_age_at_a_dated_event() -> None:
    text = "Mary Ashe became the first headmistress in 1874 at the age of 27."
    assert _read("In what year was Mary Ashe born?", text) == "1874 - 27"
    text = "Mary Ashe was appointed at the school's opening at the age of 27."
    assert _read("In what year was Mary Ashe born?", text, year=1874) == "1874 - 27"


def test_spans_of_time_are_left_to_the_templates() -> None:
    text = "Of the 84 guests staying that night, 9 were injured."
    assert _read("How many years of the guests' lives were not injured?", text) is None


def test_a_year_stated_some_years_later_than_the_one_before_it() -> None:
    text = "The pavilion that was flooded in 1968 was reopened three years later by the mayor."
    assert _read("In what year was the flooded pavilion reopened?", text) == "1968 + 3"
    text = "The mill burned in 1820 and was rebuilt the following year."
    assert _read("When was the mill rebuilt?", text) == "1820 + 1"
    text = "The mill burned in 1820 and was rebuilt the following year."
    assert _read("When did the mill open?", text) is None  # no event of the question's verb


def test_an_age_in_years_old() -> None:
    text = "The museum was founded in 1901 by Ann Pell, then 52 years old, with her own collection."
    assert _read("In what year was Ann Pell born?", text) == "1901 - 52"


def test_all_but_some_of_a_count_given_elsewhere() -> None:
    text = "The almshouse has 24 flats around a garden. Today all but 3 of its flats are occupied."
    assert _read("How many flats are occupied today?", text) == "24 - 3"
    assert _read("How many flats are not occupied today?", text) is None  # the part itself: a plain fact
    assert _read("How many of the 40 boats are afloat?", "All but 6 of the 40 boats are afloat.") == "40 - 6"


def test_a_whole_given_after_its_part() -> None:
    text = "The flood of 1912 drowned 14 cattle; 230 cattle grazed the marsh that spring."
    assert _read("How many of the cattle grazing the marsh that spring survived the flood?", text) == "230 - 14"
    assert _read("How many cattle grazed the marsh that spring?", text) is None


def test_a_change_counted_in_both_clauses_without_a_word_of_change() -> None:
    text = "The chapel seated 300 people when it opened; after the fire it was rebuilt with 220 seats."
    assert _read("How many seats did the chapel lose in the fire?", text) == "abs(220 - 300)"


def test_a_part_whose_unit_stands_before_of_which() -> None:
    text = "The new roof cost 4.5 million pounds, 3.1 million pounds of which came from the county."
    assert _read("How much of the roof's cost did not come from the county?", text) == "4500000 - 3100000"


def test_a_birth_year_from_an_age_before_its_event() -> None:
    text = "The first matron, Ruth Ogden, was 31 when she took charge of the ward in 1902."
    assert _dates(text) == [("Ruth Ogden was born in 1871.", 1871, "1902 - 31")]
    assert _read("In what year was Ruth Ogden born?", text) == "1902 - 31"


def test_the_start_of_a_term_ended_after_some_years() -> None:
    text = "His deputy, Anne Croft, moved the office in 1961; she retired in 1975 after 19 years as editor."
    assert _dates(text) == [("Anne Croft's 19 years as editor began in 1956.", 1956, "1975 - 19")]
    assert _read("When did Anne Croft become editor?", text) == "1975 - 19"


def test_an_event_dated_relative_to_another_in_its_own_sentence() -> None:
    text = "The founder, born in 1790, died in 1850, and the hall he paid for was opened three years after his death."
    assert _read("In what year was the hall opened?", text) == "1850 + 3"


def test_a_part_then_its_whole_and_the_question_year_first() -> None:
    text = "The pier had 40 lamps, 12 of them on the pavilion. By 1990 the trust had repaired 31 of the pier's 40 lamps."
    assert _read("How many lamps had still not been repaired by 1990?", text) == "40 - 31"


def test_a_number_inside_the_whole_is_no_part() -> None:
    text = "Of the 60 people aboard the two boats that capsized, 52 were rescued."
    assert _read("How many of the people aboard drowned?", text) == "60 - 52"


def test_a_length_of_time_is_no_count() -> None:
    text = "She kept the shop for 30 years, and under her the stock grew to 900 titles."
    assert _read("By how many titles did the stock grow under her?", text) is None


def test_the_other_half_of_a_pair() -> None:
    text = "In 1950 the choir had 48 voices, of whom 20 were women."
    assert _read("How many men sang in the choir in 1950?", text) == "48 - 20"
    assert _read("How many women sang in the choir in 1950?", text) is None


def test_a_share_of_a_whole() -> None:
    text = "The fair drew 24,000 people, a quarter of them from abroad."
    assert _read("How many of the fair's visitors came from abroad?", text) == "24000 * 0.25"
    text = "The new roof cost 2.5 million pounds, 30 per cent of which came from the diocese."
    assert _read("How much did the diocese give towards the roof?", text) == "2500000 * 30 / 100"
    assert _read("How much of the roof's cost did not come from the diocese?", text) == "2500000 - 2500000 * 30 / 100"


def test_a_change_whose_old_count_is_in_an_earlier_sentence() -> None:
    text = "The park opened in 1890 on 20 hectares. It was extended to 35 hectares in 1925."
    assert _read("How many hectares did the park gain in 1925?", text) == "abs(35 - 20)"
    text = "The park opened in 1890 with 20 gardeners. It was extended to 35 hectares in 1925."
    assert _read("How many hectares did the park gain in 1925?", text) is None  # no earlier count of hectares


def test_an_age_followed_by_its_year_and_a_semicolon_between_two_events() -> None:
    text = "The engineer, Rose Tait, rebuilt the shed in 1930; she had joined the firm at the age of 20 in 1915."
    assert _read("In what year was Rose Tait born?", text) == "1915 - 20"


def test_a_term_date_does_not_answer_a_birth_question_or_the_reverse() -> None:
    text = "Ida Moss joined the company at the age of 18 in 1920 and stayed with it for 40 years."
    assert _read("When did Ida Moss leave the company?", text) == "1920 + 40"
    assert _read("In what year was Ida Moss born?", text) == "1920 - 18"


def test_an_average_per_thing_counted_in_the_same_sentence() -> None:
    text = "In 1950 the dairy ran 40 rounds and delivered 9,000 pints a day."
    assert _read("On average, how many pints were delivered per round in 1950?", text) == "9000 / 40"


def test_the_year_of_an_event_another_is_dated_from() -> None:
    text = "The chapel reopened in 1960, 15 years after the fire had gutted it."
    assert ("the fire had gutted it in 1945.", 1945, "1960 - 15") in _dates(text)
    text = "The shop was sold in 1931, two years after the founder's death."
    assert _read("When did the founder die?", text) == "1931 - 2"


def test_a_ratio_over_a_length_of_time_and_a_phrase() -> None:
    text = "In 1940 the ferry carried 2,400 evacuees to the mainland in twelve weeks."
    assert _read("On average, how many evacuees did the ferry carry per week?", text) == "2400 / 12"
    text = "In 2020 the school had 900 pupils and 60 teaching staff."
    assert _read("On average, how many pupils were there per member of the teaching staff in 2020?", text) == "900 / 60"


def test_a_relative_year_dated_from_an_earlier_sentence() -> None:
    text = "The first cinema in Alby opened in 1912. Electric light had reached the town three years earlier."
    assert _read("In what year did electric light reach the town?", text) == "1912 - 3"


def test_a_count_shaped_like_a_year() -> None:
    assert [c.value for c in counts("Of the 2000 members, 140 were juniors.")] == [2000, 140]


def test_the_rest_of_a_share_named_in_its_own_clause() -> None:
    text = "The school bought the field for 60,000 pounds, 30 per cent of which was given by parents; the rest came from the county council."
    assert _read("How much of the field's price came from the county council, in pounds?", text) == "60000 - 60000 * 30 / 100"
    assert _read("How much did the parents give towards the field, in pounds?", text) == "60000 * 30 / 100"
    # a verb alone ("came") does not tie a question to the rest clause
    assert _read("How many visitors came on the open day?", text) is None


def test_all_but_some_of_them() -> None:
    text = "In 1916 some 480 horses were sent to France, and all but 35 of them came home in 1919."
    assert _read("How many horses came home from France?", text) == "480 - 35"
    assert _read("How many ships came home?", text) is None  # "them" counts horses


def test_a_relative_clause_after_an_appositive_is_about_the_name_it_describes() -> None:
    text = (
        "The first warden was Hugh Lyle, a nephew of the banker Oswald Crane, who had taken the post in 1861 at "
        "the age of 30 and who kept it until his death fourteen years later."
    )
    assert ("Hugh Lyle was born in 1831.", 1831, "1861 - 30") in _dates(text)
    assert _read("In what year was Hugh Lyle born?", text) == "1861 - 30"
    assert _read("In which year did Hugh Lyle die?", text) == "1861 + 14"  # "die": "his death"
    # the appositive's own name is the subject where nothing names one before it
    text = "Its first keeper, the surveyor Ada Moss, was appointed in 1870 at the age of 25."
    assert ("Ada Moss was born in 1845.", 1845, "1870 - 25") in _dates(text)


def test_a_total_of_a_count_and_a_further_one() -> None:
    text = "In 1890 the works employed 220 men in its forges and a further 35 in the pattern shop."
    assert _read("How many men did the works employ in 1890, counting the pattern shop?", text) == "220 + 35"
    assert _read("How many men did the works employ in 1890 in the pattern shop?", text) is None  # no cue of a total
    text = "The fleet had 12 trawlers and 4 drifters in 1910."
    assert _read("How many boats did the fleet have in 1910, including the drifters?", text) == "12 + 4"


def test_the_other_part_named_by_a_word_the_document_never_uses() -> None:
    text = "The fair ran for two days in 1952; 9,400 people came, 5,100 of them on the opening day."
    assert _read("How many people came on the closing day of the fair?", text) == "9400 - 5100"
    assert _read("How many people came on the opening day of the fair?", text) is None  # the part itself


def test_a_duration_stated_outright() -> None:
    text = "The Lyric theatre opened in 1911. It staged its last play in 1968, 57 years after it opened."
    assert _read("For how many years did the Lyric stage plays?", text) == "57"
    text = "The society's secretary for its first three decades was Mary Kell, a schoolteacher."
    assert _read("How many years did Mary Kell work for the society?", text) == "30"
    text = "Tom Ash joined the choir in 1950. He sang as its leading tenor for 22 years."
    assert _read("How many years did Tom Ash sing as the leading tenor?", text) == "22"


def test_a_duration_of_another_thing_or_person_is_not_read() -> None:
    # the end clause is of the slipway, not the yard: its two years are the template's business
    text = "The yard opened in 1870. Its slipway closed in 1931, 61 years after the yard opened."
    assert _read("How many years did the yard build ships?", text) is None
    # a term of another person
    text = "The mill opened in 1820. Its manager, Ada Crane, ran it for 30 years."
    assert _read("How many years did John Crane run the mill?", text) is None
    # not a duration: a length
    assert _read("How long is the mill race?", "The mill race was dug in 1820 and is 900 yards long.") is None


def test_a_span_from_a_range_or_from_a_beginning_to_an_end() -> None:
    text = "The Ledger was founded in 1840. Its second owner, Amos Pine, edited it from 1862 to 1901."
    assert _read("How many years did Amos Pine edit the Ledger?", text) == "1901 - 1862"
    # the start is the subject's founding, the end the activity's own clause
    text = "Rowan Athletic was founded in 1881. It played at Mill Meadow until 1927, when it moved to Park Road."
    assert _read("How many years did the club play at Mill Meadow?", text) is None  # "the club" is not named so
    assert _read("How many years did Rowan Athletic play at Mill Meadow?", text) == "1927 - 1881"
    # an end said in a "when" clause, past a birth in the same sentence
    text = "The kiln fired its first pots in 1802. Its last potter was born in 1890 and left in 1951, when the kiln closed."
    assert _read("How many years did the kiln fire pots?", text) == "1951 - 1802"


def test_a_span_from_a_range_before_its_pronoun_subject() -> None:
    # "she" after the fronted range is Ada Byrne, named in the sentence before
    text = "Ada Byrne was elected to the society in 1899. Between 1905 and 1912 she worked on the survey of the dunes."
    assert _read("How many years did Ada Byrne's survey take?", text) == "1912 - 1905"


def test_a_biographys_pronoun_is_its_subject() -> None:
    # the sentence before names a journal; "she" is still the person the text is about
    text = (
        "Ada Byrne (1861–1930) was a geologist. Her first paper appeared in the Dunlin Journal in 1884. "
        "Between 1890 and 1898 she worked on the survey of the coast."
    )
    assert _read("How many years did Ada Byrne's survey of the coast take?", text) == "1898 - 1890"


def test_an_age_said_with_then_is_no_part_of_a_sum() -> None:
    assert [c.value for c in counts("In 1906 Ada Byrne, then 35, raised £900, £400 of it from the council.")] == [900, 400]
    assert [c.value for c in counts("The club, then 35 members strong, moved.")] == [35]
    text = "In 1906 Ada Byrne, then 35, raised £900 for the survey, £400 of it from the council and the rest from friends."
    assert _read("How much of the money raised came from friends?", text) == "900 - 400"


def test_a_change_told_in_one_phrase() -> None:
    text = "Gate receipts averaged 1,840, up from 1,520 the year before."
    assert _read("By how much did the average gate receipts rise?", text) == "abs(1840 - 1520)"
    text = "The Dunlin pit was sold in 1961, after which its workforce of 230 was cut to 90."
    assert _read("How many jobs were lost after the Dunlin pit was sold?", text) == "abs(90 - 230)"


def test_an_average_gift_a_profit_and_a_share_told_in_one_phrase() -> None:
    text = "The new bells were cast in 1890. They were paid for by 240 parishioners who gave £600 in all."
    assert _read("On average, how much did each parishioner give?", text) == "600 / 240"
    assert _read("How much did each parishioner give?", text) is None  # no average asked
    text = "Amos Pell joined the Dunlin club in 1950. He had been signed from Plover in 1948 for £2,000; he was sold to Harrow in 1953 for £5,500."
    assert _read("How much profit did the Dunlin club make on Amos Pell?", text) == "abs(5500 - 2000)"
    text = "In 2001 the Harrow Street museum welcomed 80,000 visitors, of which 20,000 were children."
    assert _read("What percentage of the visitors in 2001 were children?", text) == "round(20000 / 80000 * 100, 1)"
    assert _read("What percentage of the visitors in 2001 were teachers?", text) is None


def test_a_rest_a_pro_verb_and_totals_told_across_sentences() -> None:
    # the whole told in the sentence before the rest clause
    text = "The Harrow Street board has 12 seats. In 2020 the Dunlin party won 7 seats and the Plover party the rest."
    assert _read("How many seats did the Plover party win?", text) == "12 - 7"
    # "and 310 did so": the part does what the whole was counted for
    text = "In 1910, 820 members were entitled to vote and 310 did so."
    assert _read("How many members entitled to vote did not vote in 1910?", text) == "820 - 310"
    # a sentence that opens with its count takes its subject from the sentence before
    text = "The Dunlin class was a class of steam tugs. Eight were built at Hull in 1890, and a further four at Goole in 1895."
    assert _read("How many Dunlin class tugs were built in all?", text) == "8 + 4"
    # two sums of money of one clause chain
    text = "The trust bought the mill for £900 in 1970 and spent £12,500 restoring it."
    assert _read("How much did the trust spend on the mill in all, including the purchase?", text) == "900 + 12500"


def test_all_but_after_a_fronted_whole() -> None:
    text = "The brig sank off Fastnet in 1880; of the 16 men aboard, all but four were saved."
    assert _read("How many of the men aboard were saved?", text) == "16 - 4"


def test_a_further_sum_of_money_adds_to_the_one_before() -> None:
    # a cost told without the word: "bought for" and "refitted for a further"
    text = "The lifeboat, a former pilot cutter, was bought in Hull for £2,100 and refitted for a further £650."
    assert _read("How much did the lifeboat cost in all?", text) == "2100 + 650"
    assert _read("How many lifeboats did Hull have in all?", text) is None


def test_the_one_part_a_list_after_a_colon_leaves_uncounted() -> None:
    text = "The schooner left Hull in 1890 with 30 men aboard: a crew of 18 under Captain Amos Pell, and the survey party."
    assert _read("How many men made up the survey party?", text) == "30 - 18"
    text = "The band numbered 40: 12 cornets, 20 horns and the drummers."
    assert _read("How many drummers were in the band?", text) == "40 - (12 + 20)"
    # every part counted, or the question asks for a counted part: nothing to compute
    text = "The band numbered 40: 12 cornets, 20 horns and 8 drummers."
    assert _read("How many drummers were in the band?", text) is None


def test_a_span_needs_both_ends_in_the_activitys_own_words() -> None:
    # a beginning in a "when" clause is not the activity's end
    text = "The baths opened in 1900. Swimming at the baths ended in 1990, when the council opened a new pool."
    assert _read("How many years did the baths offer swimming?", text) == "1990 - 1900"
    text = "The baths opened in 1900. A cafe was added in 1931 and closed in 1960."
    assert _read("How many years did the baths offer swimming?", text) is None


def test_an_event_elided_after_a_name_takes_the_clauses_predicate() -> None:
    text = "The firm was founded by two sisters, Ann and Ivy Cole. Ann was born in 1870, four years before Ivy."
    assert ("Ivy was born in 1874.", 1874, "1870 + 4") in _dates(text)
    assert _read("In what year was Ivy Cole born?", text) == "1870 + 4"


def test_a_term_in_the_perfect_ended_at_the_event_before_it() -> None:
    text = "A clubhouse of its own was opened in 1931; before that the club had met in the Crown inn for 40 years."
    assert ("the club met in the Crown inn from 1891.", 1891, "1931 - 40") in _dates(text)
    assert _read("In what year did the club begin meeting at the Crown inn?", text) == "1931 - 40"
    # a verb-led clause takes the noun phrase its sentence opens with, a copula's name aside
    text = "The mill closed in 1962, having worked without a break for 85 years."
    assert ("The mill worked without a break from 1877.", 1877, "1962 - 85") in _dates(text)


def test_a_product_of_a_count_and_what_each_one_has() -> None:
    text = "The guild was formed in 1702 by forty masons, each of whom gave two shillings a year."
    assert _read("How many shillings a year did the masons give altogether?", text) == "40 * 2"
    assert _read("How many shillings a year did each mason give?", text) is None  # what each one gave is stated


def test_joining_is_a_change_and_a_total_with_a_named_part() -> None:
    text = "The union grew from 340 members in 1910 to 1,020 in 1930."
    assert _read("How many members joined the union between 1910 and 1930?", text) == "abs(1020 - 340)"
    text = "Today the orchestra has 61 players and a youth section of 35 students."
    assert _read("How many musicians does the orchestra have, counting its youth section?", text) == "61 + 35"


def test_the_year_before_and_a_perfect_term_of_a_named_thing() -> None:
    text = "The spire was rebuilt in 1890 after it had been blown down the year before."
    assert _read("In what year was the spire blown down?", text) == "1890 - 1"
    text = "The bridge was widened in 1960, when its railings were also replaced; the old railings had stood for 95 years."
    assert ("the old railings stood from 1865.", 1865, "1960 - 95") in _dates(text)


def test_a_total_with_a_further_count_in_a_later_sentence_and_a_whole_less_a_part() -> None:
    text = "The dock was built at a cost of 52,000 pounds. A flood damaged it, and repairs took a further 7,500 pounds."
    assert _read("What was the total cost of the dock, including the repairs, in pounds?", text) == "52000 + 7500"
    text = "The great bell weighs 2,100 kilograms, and the whole peal weighs 7,300 kilograms."
    assert _read("How much do the bells other than the great bell weigh, in kilograms?", text) == "7300 - 2100"
    assert _read("How much does the great bell weigh, in kilograms?", text) is None


def test_a_duration_cut_off_at_another_event_is_not_the_whole_term() -> None:
    text = "The rector, Ned Vane, who held the living for 30 years from 1850, rebuilt the church in 1868."
    assert _read("How many years had Ned Vane held the living when the church was rebuilt?", text) is None


def test_a_share_after_of_which_and_the_rest_of_a_whole_told_first() -> None:
    text = "The new organ cost 80,000 pounds, of which 25 per cent came from a legacy."
    assert _read("How much did the legacy give towards the organ, in pounds?", text) == "80000 * 25 / 100"
    text = "Of its cost of 5,400 pounds, the mill owner gave 2,000, and the rest was raised by a bazaar."
    assert _read("How much of the cost was raised by the bazaar, in pounds?", text) == "5400 - 2000"


def test_others_and_the_one_named_and_a_count_after_an_addition() -> None:
    text = "The school was founded by Mary Pike, who ran three other schools in the county."
    assert _read("How many schools did Mary Pike run, including this one?", text) == "3 + 1"
    text = "The canal opened in 1790 with 12 miles of waterway. A branch was dug in 1801, adding 4 miles."
    assert _read("How many miles of waterway did the canal have after the branch was dug?", text) == "12 + 4"
    assert _read("How many miles did the branch add?", text) is None  # the added count itself is stated


def test_an_age_at_the_time_and_the_other_half_of_a_share() -> None:
    text = "The society was founded in 1840 by local weavers. Its first secretary, the clerk Amos Hirst, was 29 at the time."
    assert ("Amos Hirst was born in 1811.", 1811, "1840 - 29") in _dates(text)
    text = "By 1900 the club had 240 members, a third of whom were women."
    assert _read("How many of the club's members in 1900 were men?", text) == "240 - 240 * 1 / 3"
    assert _read("How many of the club's members in 1900 were women?", text) == "240 * 1 / 3"


def test_a_year_implied_by_a_term_before_an_event_answers_when_that_event_happened() -> None:
    # "the mill" is the object, not the question's verb: the verb is "close"
    text = "The Crane family sold the mill in 1905 to the Delph Brick Company, which ran it for 50 years before closing it."
    assert _read("In what year did the Delph Brick Company close the mill?", text) == "1905 + 50"


def test_a_share_whose_giver_stands_between_of_which_and_the_share() -> None:
    text = "The hall was re-roofed in 2004 at a cost of 300,000 pounds, of which a county grant paid 40 per cent."
    assert _read("How much did the county grant pay towards the roof, in pounds?", text) == "300000 * 40 / 100"


def test_a_share_of_it_named_by_its_own_clause() -> None:
    text = "The new organ cost 20,000 pounds; a bequest met 30 per cent of it."
    assert _read("How much of the organ's cost did the bequest meet, in pounds?", text) == "20000 * 30 / 100"


def test_a_range_in_a_clause_that_shares_the_subject_before_it() -> None:
    text = "The engine house was closed in 1961 and restored between 1988 and 1993 by volunteers."
    assert _read("How long did the restoration of the engine house take, in years?", text) == "1993 - 1988"


def test_the_age_of_a_thing_dates_its_making() -> None:
    text = "The ferry's last crossing was made in 1950 by the Kestrel, then 61 years old."
    assert _read("In what year was the Kestrel built?", text) == "1950 - 61"
    # a person's age answers no question about the making of something else
    text = "The Kestrel was launched at Hull. Her first master was Amos Kestrel, then 30, in 1889."
    assert _read("In what year was the Kestrel built?", text) is None


def test_a_year_the_document_implies_answers_by_the_words_of_its_source() -> None:
    # the statement "the work took until 1904" names only the work; its sentence names the roof
    text = "In 1902 the roof of the chapel was found to be rotten; the work took two years."
    assert _read("In what year was the work on the chapel roof finished?", text) == "1902 + 2"


def test_a_span_whose_ends_are_said_by_a_particle_a_preposition_or_a_state() -> None:
    # "from 1801" starts the activity; "was wound up" ends its subject
    text = "The Fenwick Bank Company was formed in 1801 by six traders. The company was wound up in 1852."
    assert _read("For how many years did the company exist?", text) == "1852 - 1801"
    text = "Lace was made at Orton from 1790. Lace making at Orton was shut down in 1875."
    assert _read("For how many years was lace made at Orton?", text) == "1875 - 1790"
    # a state until a year began with the last event told before it
    text = "The mill burned down in 1921, and the last workers left. The mill lay empty until 1960, when a school bought it."
    assert _read("For how many years did the mill lie empty?", text) == "1960 - 1921"
    # a state whose sentence tells its own start is not dated from the sentence before
    text = "The mill burned down in 1921. From 1930 the mill lay empty until 1960."
    assert _read("For how many years did the mill lie empty?", text) == "1960 - 1930"


def test_all_but_m_of_a_whole_told_after_its_noun() -> None:
    text = "The barque ran aground in 1871, and all but 3 of her crew of 40 were saved by the lifeboat."
    assert _read("How many of the barque's crew were saved?", text) == "40 - 3"


def test_a_product_of_a_count_and_a_sum_each() -> None:
    text = "The hall was built in 1890 by twelve farmers of the parish, each of whom gave £25."
    assert _read("How much did the farmers of the parish give in all, in pounds?", text) == "12 * 25"
    # what each gave is asked, not the product
    assert _read("How much did each of the farmers give, in pounds?", text) is None


def test_a_remainder_after_several_parts() -> None:
    text = "The new organ cost £48,000 in 1996. Of this, the diocese gave £20,000, a charity £8,000, and the remainder came from the choir's own concerts."
    assert _read("How much did the choir's own concerts raise for the organ, in pounds?", text) == "48000 - (20000 + 8000)"
    text = "The pavilion was built in 1905 at a cost of £900; the members gave £650 and the rest was borrowed from a brewery."
    assert _read("How much did the club borrow to build the pavilion, in pounds?", text) == "900 - 650"
    # the question's verb in a part's clause and its subject in the rest clause: the rest
    text = "The repairs cost £1,200 in 1911; the council paid £700 and the parish found the remainder."
    assert _read("How much did the parish pay towards the repairs, in pounds?", text) == "1200 - 700"
    assert _read("How much did the council pay towards the repairs, in pounds?", text) is None  # stated
    # a shared verb alone is no tie, and a percentage is no part
    text = "In 2001 the club bought its ground for 90,000 pounds, 30 per cent of which came from members; the rest came from a grant."
    assert remainder("How many people came to the opening match?", text, []) is None
    assert remainder("How much did the grant give for the club's ground?", text, []) is None  # 30 per cent is share's


def test_an_equal_split() -> None:
    text = "The mill was sold to three brothers from the town, who paid £9,000 between them in equal shares."
    assert _read("How much did each of the brothers pay, in pounds?", text) == "9000 / 3"
    # not said to be equal: no split
    text = "The mill was sold to three brothers from the town, who paid £9,000 between them."
    assert _read("How much did each of the brothers pay, in pounds?", text) is None


def test_the_other_things_of_a_whole() -> None:
    text = "In 1850 the fleet of eight boats landed 2,400 tons of fish, 900 of them from the Lark and the Wren."
    assert _read("How many tons of fish did the other six boats land in 1850?", text) == "2400 - 900"


def test_an_area_from_two_dimensions_and_the_worth_of_a_holding() -> None:
    text = "The assembly room is 60 feet long and 25 feet wide, with a sprung floor."
    assert _read("What is the area of the assembly room, in square feet?", text) == "60 * 25"
    # a stated area is the document's own answer, not a product
    text = "The assembly room is 60 feet long and 25 feet wide, a floor area of 1,500 square feet."
    assert _read("What is the area of the assembly room, in square feet?", text) is None
    text = "The company sold 800 shares of £5 each in 1870; the brewer Amos Hale bought 120 of them."
    assert _read("What were Amos Hale's shares worth, in pounds?", text) == "120 * 5"


def test_a_count_after_an_addition_said_as_a_thing_of_n() -> None:
    text = "The school opened in 1880 with 120 places. A gymnasium was added in 1901, and a new wing of 60 places in 1935."
    assert _read("How many places did the school have after the new wing was added?", text) == "120 + 60"
    text = "The jetty was 300 metres long when it opened. An extension of 90 metres in 1910 let larger boats call."
    assert _read("How long was the jetty after the 1910 extension, in metres?", text) == "300 + 90"
    # the clause of another event brings nothing to the question's
    assert _read("How many places did the school have after the gymnasium was added?", text) is None


def test_a_span_from_a_feature_added_to_its_dropping_and_from_then_on() -> None:
    text = "The paper began in 1850. Its owners added a Saturday edition in 1871, and the Saturday edition was dropped in 1930."
    assert _read("For how many years did the paper have a Saturday edition?", text) == "1930 - 1871"
    text = "The pump was driven by a beam engine from 1840. The engine failed in 1902; from then on the pump was driven by electricity, until the pump was stopped in 1950."
    assert _read("For how many years was the pump driven by electricity?", text) == "1950 - 1902"


def test_a_count_after_a_decrease_and_a_rest_clause_without_a_verb() -> None:
    text = "The canal was 30 miles long when it opened. In 1820 the engineer cut through the hill, shortening it by 4 miles."
    assert _read("How long was the canal after the engineer cut through the hill, in miles?", text) == "30 - 4"
    text = "Of its 60 allotments, 45 are let to tenants from the town and the rest to tenants from the villages."
    assert _read("How many allotments are let to tenants from the villages?", text) == "60 - 45"
    assert _read("How many allotments are let to tenants from the town?", text) is None  # stated


def test_inflected_verb_and_its_narrower_forms() -> None:
    from gaiamesh.orchestrated.readings.wording import inflected_verb

    assert inflected_verb("died") and inflected_verb("stands") and inflected_verb("Reading")
    assert not inflected_verb("close") and not inflected_verb("mill")  # a lemma, a noun
    assert not inflected_verb("reading", ing=False) and inflected_verb("added", ing=False)
    assert not inflected_verb("stands", present=False) and inflected_verb("restored", present=False)


def test_any_fraction_a_sum_each_after_its_verb_and_a_base_in_the_same_sentence() -> None:
    text = "In 1920 the mill employed 90 hands, two fifths of them girls."
    assert _read("How many girls did the mill employ in 1920?", text) == "90 * 0.4"
    text = "In 1920 the mill employed 90 hands, two sevenths of them girls."
    assert _read("How many girls did the mill employ in 1920?", text) == "90 * 2 / 7"
    # "N X paid £P each" is a product; "N shares of £P each" is a price, not a payment
    text = "The chapel was saved in 1990 by a society whose 50 members paid £4 each towards the roof."
    assert _read("How much did the society's members pay towards the roof in all, in pounds?", text) == "50 * 4"
    text = "The company raised its capital by selling 800 shares of £5 each; the brewer Amos Hale took 120 of them."
    assert _read("What were Amos Hale's shares worth in all, in pounds?", text) == "120 * 5"
    # the base before an addition in its own sentence, under a compound's head; not a part of it
    text = "The inn opened in 1880 with 20 bedrooms, and was enlarged in 1905 by a new wing of 12 rooms."
    assert _read("How many bedrooms did the inn have after the 1905 enlargement?", text) == "20 + 12"
    text = "The line was 30 miles long. The engineer relaid 3 miles of the track in 1860, shortening it by 4 miles."
    assert _read("How long was the line after the engineer relaid the track, in miles?", text) == "30 - 4"


def test_a_part_taken_out_of_a_whole_in_the_same_unit() -> None:
    # "N things out of/from M things": what was not taken is the rest
    text = "By the autumn the club had sold 180 tickets out of 240 printed tickets for the dance."
    assert _read("How many of the printed tickets did the club not sell?", text) == "240 - 180"
    text = "She repaired 30 clocks from 45 donated clocks."
    assert _read("How many of the donated clocks were not repaired?", text) == "45 - 30"
    # another unit after "from" is no whole of the part ("raised 200 pounds from 250 donors")
    assert _read("How many of the donors did not pay?", "The fair raised 200 pounds from 250 donors.") is None


def test_identifier_numbers_count_nothing() -> None:
    assert [c.value for c in counts("Route 66 passed 40 diners, and the Model 4.2 had 12 seats.")] == [40, 12]
