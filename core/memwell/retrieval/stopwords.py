"""Stop words for keyword search: English, Spanish, Portuguese, Arabic, Chinese, Korean, Japanese.

All entries are lowercase. The lists are applied together (a query may mix languages), so
function words that are also common content words in another of these languages (Spanish
"son", Portuguese "era", English "won") are left out.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS_EN = _words(
    # articles and determiners
    "a an the this that these those some any each every all both either neither such no other "
    # pronouns
    "i me my mine myself we us our ours ourselves you your yours yourself yourselves "
    "he him his himself she her hers herself it its itself they them their theirs themselves "
    "one what which who whom whose where when why how "
    # auxiliaries and contraction fragments
    "am is are was were be been being have has had having do does did doing done "
    "will would shall should can could may might must ought "
    "don doesn didn isn aren wasn weren wouldn couldn shouldn hasn haven hadn "
    "ll ve re d s t m "
    # prepositions
    "about above across after against along among around at before behind below beneath "
    "beside between beyond by down during except for from in inside into near of off on onto "
    "out outside over past since through throughout to toward towards under until up upon "
    "via with within without "
    # conjunctions and fillers
    "and or but nor so yet if then than because as while although though unless whether "
    "also not very too only there here "
    # vague time, vague references and request words
    "yesterday today tomorrow earlier later recently ago just now "
    "thing things stuff something anything everything nothing "
    "please help find show get tell give"
)

STOPWORDS_ES = _words(
    # articles and determiners
    "el la lo los las un una unos unas este esta estos estas ese esa esos esas aquel aquella "
    # pronouns
    "yo me mi mis tú tu tus te él ella ello nosotros nosotras vosotros vosotras usted ustedes "
    "ellos ellas se su sus nos os le les "
    # prepositions and conjunctions
    "de del al a en con por para sobre entre hasta desde hacia según y e o u ni pero sino "
    "si porque como que aunque "
    # auxiliaries and vague verbs
    "es fue fueron ser estar está están estaba haber ha han había tener tiene hacer "
    # vague time
    "ayer hoy mañana antes después despues ahora recientemente luego "
    # question and request words
    "qué cómo cuándo dónde quién cuál cuando donde quien cual porqué favor ayuda algo nada "
    "muy más ya también"
)

STOPWORDS_PT = _words(
    # articles and determiners
    "o a os as um uma uns umas este esta estes estas esse essa esses essas aquele aquela "
    "isso isto "
    # pronouns
    "eu me meu minha meus minhas tu te teu tua você vocês ele ela eles elas nós nos seu sua "
    "seus suas lhe "
    # prepositions and conjunctions
    "de do da dos das em no na nas num numa com por pelo pela pelos pelas para sem sobre "
    "entre até desde e ou mas nem se porque como que quando onde "
    # auxiliaries and vague verbs
    "é são foi foram ser estar está estão estava ter tem tinha fazer há "
    # vague time
    "ontem hoje amanhã antes depois agora recentemente "
    # question and request words
    "quê porquê qual quem favor ajuda algo nada muito mais já também não"
)

STOPWORDS_AR = _words(
    # article and connectors
    "ال و أو لكن ثم بل أن إن "
    # pronouns and demonstratives
    "أنا نحن أنت أنتم هو هي هم هن هذا هذه ذلك تلك هنا هناك الذي التي الذين "
    # prepositions
    "من إلى الى في على عن مع بين عند ل ب ك "
    # auxiliaries, negation and vague verbs
    "كان كانت يكون تكون قد لقد صار أصبح يمكن ممكن لا لم لن ما كل بعض "
    # vague time
    "أمس امس بالأمس اليوم غدا الآن قبل بعد مؤخرا "
    # question and request words
    "لماذا كيف ماذا متى أين هل فضلا ساعد"
)

STOPWORDS_ZH = _words(
    # pronouns (simplified and traditional)
    "我 我们 我們 你 你们 你們 您 他 她 它 他们 他們 她们 它们 这 這 那 这个 這個 那个 那個 "
    "这些 這些 那些 这里 這裡 那里 那裡 "
    # particles
    "的 了 着 著 过 過 得 地 吗 嗎 呢 吧 啊 呀 嘛 啦 "
    # common vague verbs
    "是 有 在 被 把 给 給 让 讓 用 到 去 来 來 做 说 說 看 找 想 要 能 会 會 可以 "
    # prepositions and conjunctions
    "和 与 與 或 或者 但 但是 因为 因為 所以 如果 虽然 雖然 而 也 都 就 还 還 又 再 才 只 "
    # vague time
    "之前 以前 之后 之後 以后 以後 刚才 剛才 现在 現在 昨天 今天 明天 最近 "
    # vague references and question words
    "东西 東西 事情 事 什么 什麼 哪个 哪個 哪些 怎么 怎麼 为什么 為什麼 多少 一个 一個 一些 "
    # request words
    "请 請 帮 幫 帮忙 幫忙 告诉 告訴"
)

STOPWORDS_KO = _words(
    # particles
    "은 는 이 가 을 를 의 에 에서 로 으로 와 과 도 만 까지 부터 한테 에게 께 처럼 같이 보다 "
    "마다 밖에 대로 "
    # pronouns and demonstratives
    "나 나는 내가 나를 너 우리 저 저희 그 그녀 그들 이것 저것 그것 여기 저기 거기 "
    # common verbs and auxiliaries
    "있다 없다 하다 되다 이다 아니다 주다 오다 가다 "
    # dependent and vague nouns
    "것 거 등 수 때 곳 중 분 "
    # adverbs
    "잘 더 또 매우 정말 아주 많이 너무 좀 "
    # conjunctions
    "그리고 하지만 그래서 그런데 그러나 또는 그러면 "
    # question words
    "왜 어떻게 뭐 언제 어디 누구 무엇 어떤 "
    # vague time and request words
    "어제 오늘 내일 최근 지금 아까 나중 전에 제발 부탁"
)

STOPWORDS_JA = _words(
    # demonstratives
    "これ それ あれ どれ この その あの どの ここ そこ あそこ どこ "
    # auxiliaries and vague verbs
    "する した して です でした ます ました いる ある なる できる ください "
    # particles and connectors
    "は が を に で と も へ や か ね よ の こと もの ため そして しかし また でも から まで "
    "より だけ について という "
    # question words
    "なぜ どう 何 いつ 誰 "
    # vague time
    "昨日 今日 明日 最近 今 さっき 前 後"
)

ALL_STOPWORDS = (
    STOPWORDS_EN
    | STOPWORDS_ES
    | STOPWORDS_PT
    | STOPWORDS_AR
    | STOPWORDS_ZH
    | STOPWORDS_KO
    | STOPWORDS_JA
)
