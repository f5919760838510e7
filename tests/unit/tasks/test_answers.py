from gaiamesh.tasks.answers import exact_match, normalize


def test_normalize_case_space_punctuation() -> None:
    assert normalize("  Port Ellery. ") == "port ellery"
    assert exact_match("port   ellery!", "Port Ellery") == 1
    assert exact_match("Port", "Port Ellery") == 0


def test_a_numbers_sign_survives_normalization() -> None:
    assert normalize("-32.") == "-32" and exact_match("-32", "32") == 0 and exact_match("-32", "-32") == 1
    assert normalize("- bullet") == "bullet" and normalize("--") == ""
