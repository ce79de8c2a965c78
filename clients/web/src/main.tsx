// The web table's entry: the header (title, language), and the lobby or a table by the address.
import "./generated/fonts.css";
import "./styles.css";

import type { JSX } from "preact";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";

import { Deck } from "./components/Deck";
import { Lobby } from "./components/Lobby";
import { TablePage } from "./components/Table";
import { lang, setLang, t } from "./i18n";
import { currentRoute, type Route } from "./session";

function App(): JSX.Element {
  const [route, setRoute] = useState<Route>(currentRoute);
  const [, setLanguage] = useState(lang());
  useEffect(() => {
    const onHash = (): void => setRoute(currentRoute());
    const onLang = (): void => setLanguage(lang());
    window.addEventListener("hashchange", onHash);
    window.addEventListener("gostop-lang", onLang);
    return () => {
      window.removeEventListener("hashchange", onHash);
      window.removeEventListener("gostop-lang", onLang);
    };
  }, []);
  useEffect(() => {
    document.title = route.name === "table" ? `${t("title")} · ${route.gameId}` : `${t("title")} · ${t("lobby")}`;
  });
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          <span class="logo" aria-hidden="true" />
          {t("title")}
        </a>
        <a class="nav" href="#/cards" data-testid="cards-link">
          {t("cardsLink")}
        </a>
        <button
          class="lang"
          data-testid="lang"
          onClick={() => {
            setLang(lang() === "ko" ? "en" : "ko");
            setLanguage(lang());
          }}
        >
          {t("langSwitch")}
        </button>
      </header>
      {route.name === "lobby" && <Lobby />}
      {route.name === "cards" && <Deck />}
      {route.name === "table" && <TablePage key={route.gameId} gameId={route.gameId} />}
    </>
  );
}

document.documentElement.lang = lang();
const root = document.getElementById("app");
if (root) {
  root.textContent = ""; // the static "loading" line of index.html
  render(<App />, root);
}
